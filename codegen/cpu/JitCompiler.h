//===- JitCompiler.h - kiln IR to JIT'd CPU code ------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Compiles a kiln-level module through the whole CPU pipeline (optimize,
// decompose, kiln→linalg, fusion, bufferization, BLAS calls, LLVM) and JITs
// it with ORC for the host CPU.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_JITCOMPILER_H
#define KILN_CODEGEN_CPU_JITCOMPILER_H

#include "runtime/CompiledFunction.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace mlir::kiln {

/// A training graph's forward: convolutions with at least this many output
/// positions run through oneDNN (CpuCompileOptions::minOutputPositionsToDnnl;
/// 8 x 56 x 56 is 25088, resnet's first stage at 224 px and batch 8).
constexpr int64_t kTrainingMinOutputPositions = 16384;

/// Options of one CPU compilation.
struct CpuCompileOptions {
  /// When non-empty, the IR after every pass is written into this folder
  /// (NN-<pass>.mlir), plus the kiln-opt command that reproduces the run.
  std::string debugDir;
  /// The on-disk compile cache folder (runtime/CompileCache.h); empty
  /// disables it. The key is the input IR, the pass pipeline, the host CPU
  /// (triple, name, features), LLVM's version and kiln's build id; the
  /// value is the relocatable object file. With a debug folder the cache is
  /// not read (every pass must run to be dumped), only written.
  std::string cacheDir;
  /// Bound on the cache folder's total size in bytes (kiln.config
  /// cache_max_mb, KILN_CACHE_MAX_MB); 0 is unbounded. Least recently used
  /// entries are evicted past it.
  uint64_t cacheMaxBytes = 0;
  /// Run big loop nests on several threads (kiln-cpu-parallelize-loops). The
  /// frontend sets it when torch.get_num_threads() > 1 at compile time: at
  /// one thread the outlined parallel loops cost more than they save (they
  /// lose LLVM's alias facts about the arena's buffers). Recorded in the
  /// pipeline text, hence in the cache key.
  bool parallelLoops = true;
  /// Run f32 kxk convolutions through oneDNN (kiln-cpu-convs-to-dnnl) when
  /// kiln was built with it (kiln.config.dnnl_convs, KILN_DNNL_CONVS=1; off
  /// by default: with the weights reordered on every call it does not beat
  /// im2col + MKL yet, docs/performance.md; off, only convolutions with big
  /// im2col columns go there). Recorded in the pipeline text,
  /// hence in the cache key.
  bool dnnlConvs = false;
  /// Without dnnlConvs, convolutions whose im2col columns would be big next
  /// to their weight, or with many output positions, still run through
  /// oneDNN (kBigColumnsBytes, kMinOutputPositions in JitCompiler.cpp);
  /// false keeps them im2col (graphs with a compiled
  /// backward: with them on oneDNN, one ReLU pre-activation of
  /// test_training_cnn.py's resnet18, -4e-6 in float64, rounds to the other
  /// side of zero and its 20-step SGD curve leaves eager's by 1.7e-3; eager
  /// nudged by 1e-5 there drifts as far: rounding on a kink, not a bug;
  /// docs/performance.md, "A ReLU kink, not a bug").
  bool bigColumnsToDnnl = true;
  /// With bigColumnsToDnnl off, convolutions with at least this many output
  /// positions (batch x height x width) still run through oneDNN (0: none).
  /// A training graph's forward sets kTrainingMinOutputPositions: resnet18's
  /// stem and first stage at 224 px (58 MiB of im2col columns per 3x3
  /// convolution) run ~10% faster as oneDNN calls, while at 64 px, where
  /// the per-call weight reorders weigh more, oneDNN calls were slower.
  int64_t minOutputPositionsToDnnl = 0;
  /// Run kiln-layout (channels-last regions: permutes sunk and cancelled,
  /// the convolutions between them on NHWC) when the graph has a
  /// convolution (kiln.config.layout, KILN_LAYOUT=0 turns it off). Recorded
  /// in the pipeline text, hence in the cache key.
  bool layout = true;
  /// The convolution gradients of kiln-autodiff run as oneDNN's
  /// backward-data / backward-weights primitives (ConvGradsToDnnl.cpp,
  /// kiln.config.dnnl_conv_grads); off, they keep their decomposition.
  /// Recorded in the pipeline text, hence in the cache key.
  bool dnnlConvGrads = true;
  /// Register LLVM's perf JIT listener (kiln.config.perf_jitdump,
  /// KILN_PERF_JITDUMP=1). Not in the cache key.
  bool perfJitdump = false;
};

/// What one compileForCpu call did with the disk cache.
struct CpuCompileInfo {
  /// The code was loaded from the disk cache: no pass or LLVM ran.
  bool diskHit = false;
  /// The cache was consulted and missed (no entry, or an invalid one).
  bool diskMiss = false;
  /// A new entry was written.
  bool diskStored = false;
  /// An existing entry did not validate (it was recompiled and replaced).
  bool diskCorrupt = false;
  /// Why the cache could not be used, e.g. which entry was corrupt and
  /// why, or why writing failed; empty when all went well.
  std::string cacheMessage;
};

/// Compiles `module`, whose public `func.func @<entry>` takes and returns
/// ranked tensors of static shape, into a runtime function. The compiled
/// entry takes one memref descriptor per input, then one per result
/// (caller-allocated, contiguous), and returns nothing. On failure returns a
/// null entry and sets `error` to the diagnostics (with locations).
/// `module` is modified in place (it is lowered) unless the code came from
/// the disk cache. `info`, when given, says what the cache did.
::kiln::rt::CompiledFunction compileForCpu(ModuleOp module, const std::string &entry,
                                           const CpuCompileOptions &options, std::string &error,
                                           CpuCompileInfo *info = nullptr);

/// Name of the packed `void(void **)` wrapper of `entry`'s C interface
/// (ObjectCode.h addPackedWrapper), the symbol a compiled graph is called by.
std::string packedName(const std::string &entry);

/// kiln.export's compilation of `module` (as compileForCpu, never cached):
/// a position-independent relocatable object for the host CPU to be linked
/// into a shared library. Calls of kiln's run-time functions go through the
/// table `__kiln_imports` the object defines (ExportObject.h); `imports`
/// receives their names in table order. With `baseline`, for the
/// architecture's baseline CPU (ObjectCode.h hostTargetMachine) instead of
/// this one. On failure returns "" with `error` set. `module` is lowered in
/// place.
std::string compileForCpuExport(ModuleOp module, const std::string &entry, bool parallelLoops,
                                bool baseline, std::vector<std::string> &imports,
                                std::string &error);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_JITCOMPILER_H
