//===- Plan.h - a function's whole launch plan in one call -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A Plan is one emitted function's steps (kernels and cuBLASLt GEMMs) over
// numbered buffers, run by one call: the caller passes the input and
// output pointers and one scratch arena (torch's allocator, allocated
// once by kiln/cuda/graph.py), the plan computes every buffer's address
// and launches everything on the caller's stream — no Python, no ctypes
// per kernel. A CapturedPlan records one run into a CUDA graph (driver
// API stream capture on a private stream) and replays it with one
// cuGraphLaunch on the caller's stream, after copying the inputs that do
// not live at their captured addresses into its static buffers.
//
// Spec (text, one step per line; written by kiln/cuda/plan.py):
//   kiln-plan 1 <buffers> <inputs> <outputs>
//   buf <i> in <j> | out <j> | tmp <byte offset in the arena>
//         | val <n>                               (a kernel's `long long` n:
//                                                  a dynamic dim's value)
//   ws <byte offset> <bytes>                      (cuBLASLt workspace)
//   kernel <name> <gx> <gy> <gz> <bx> <by> <bz> <shared> <n> <buf>...
//   gemm <in type> <out type> <batch> <m> <n> <k> <transB> <tf32>
//        <epilogue> <a> <b> <c> <bias or -1>
// Types are cudaDataType codes, epilogues Cublaslt.h's Epilogue values.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_PLAN_H
#define KILN_RUNTIME_CUDA_PLAN_H

#include "runtime/cuda/Cublaslt.h"
#include "runtime/cuda/CudaRuntime.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::rt::cuda {

class Plan {
public:
  /// Parses `spec` and looks every kernel up in `module` (which must
  /// outlive the plan). Null with `error` set on a bad spec or kernel.
  static std::unique_ptr<Plan> create(Module &module, const std::string &spec, std::string &error);

  /// Runs every step on `stream`. `inputs`/`outputs`: device pointers in
  /// the spec's order; `arena`: the scratch base (tmp buffers, workspace).
  bool run(void *const *inputs, void *const *outputs, void *arena, CUstream stream,
           std::string &error);

  int numInputs() const { return numInputs_; }
  int numOutputs() const { return numOutputs_; }
  int numKernels() const;
  int numGemms() const { return (int)gemms_.size(); }

private:
  struct Step {
    const Kernel *kernel = nullptr; // null: gemm
    LaunchDims dims;
    int gemm = -1;
    std::vector<int> args; // buffer indices (gemm: a, b, c, bias or -1)
  };
  struct Buffer {
    enum Kind { In, Out, Tmp, Val } kind = Tmp;
    size_t index = 0; // input/output position, arena offset or value
  };
  Plan() = default;
  bool parseLine(Module &module, const std::string &line, std::string &error);

  int numInputs_ = 0, numOutputs_ = 0;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  std::vector<std::unique_ptr<LtGemm>> gemms_;
  size_t wsOffset_ = 0, wsBytes_ = 0;
  std::vector<void *> ptrs_;    // per run: every buffer's address
  std::vector<void *> argPtrs_; // per kernel launch
};

/// A plan recorded into a CUDA graph with fixed addresses.
class CapturedPlan {
public:
  /// Captures one run of `plan` with these pointers (which the graph then
  /// always uses). Run the plan once normally first: cuBLASLt's set-up
  /// and module loading must not happen during a capture.
  static std::unique_ptr<CapturedPlan>
  capture(Plan &plan, void *const *inputs, void *const *outputs, void *arena, std::string &error);
  ~CapturedPlan();
  CapturedPlan(const CapturedPlan &) = delete;
  CapturedPlan &operator=(const CapturedPlan &) = delete;

  /// Copies `n` inputs (dst[i] ← src[i], bytes[i]) then launches the graph,
  /// all on `stream`.
  bool replay(int n, void *const *dst, void *const *src, const size_t *bytes, CUstream stream,
              std::string &error);

private:
  CapturedPlan() = default;
  const DriverApi *api_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_PLAN_H
