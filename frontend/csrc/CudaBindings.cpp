//===- CudaBindings.cpp - kiln._C bindings of the CUDA emitter and NVRTC ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Two functions for kiln/cuda (Python): `cuda_emit(ir)` parses kiln IR text
// (what the frontend captures), runs the CUDA prepare pipeline and the
// emitter, and returns the source plus the launch plan as plain Python
// data; `nvrtc_compile(source, arch)` compiles a source to cubin/PTX. Both
// need MLIR/NVRTC and so live in the extension; running the result needs
// only libkiln_cuda (runtime/cuda). Errors are Python exceptions carrying
// the diagnostics (emitter) or NVRTC's log and the numbered source.
// Binaries are cached on disk in the compile cache's folder
// (runtime/CompileCache.h, <KILN_CACHE_DIR>/cuda), keyed by the NVRTC
// version, the arch, cubin/PTX and the full source.
//===----------------------------------------------------------------------===//
#include "CudaBindings.h"

#include "registration/Registration.h"
#include "runtime/CompileCache.h"
#include "codegen/cuda/CudaEmitter.h"
#ifdef KILN_HAVE_NVRTC
#include "codegen/cuda/NvrtcCompiler.h"
#endif

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <optional>

namespace nb = nanobind;

namespace kiln {
namespace {

mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::DialectRegistry registry;
    mlir::kiln::registerAllDialects(registry);
    mlir::kiln::registerAllPasses();
    ctx = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
  });
  return *ctx;
}

nb::list strings(const std::vector<std::string> &v) {
  nb::list l;
  for (const std::string &s : v)
    l.append(s);
  return l;
}

nb::list ints(const std::vector<int64_t> &v) {
  nb::list l;
  for (int64_t s : v)
    l.append(s);
  return l;
}

/// The CudaModule as dicts and lists (schema: kiln/cuda/plan.py).
nb::dict toPython(const mlir::kiln::cuda::CudaModule &m) {
  using namespace mlir::kiln::cuda;
  nb::dict d;
  d["source"] = m.source;
  nb::list kernels, externs, unsupported, buffers, functions;
  for (const KernelInfo &k : m.kernels) {
    nb::dict e;
    e["name"] = k.name;
    e["function"] = k.function;
    e["kind"] = k.kind == KernelInfo::Pointwise ? "pointwise" : "row_reduction";
    e["grid"] = k.gridX;
    e["block"] = k.blockX;
    e["args"] = strings(k.args);
    if (k.symbols) { // symbolic sizes: launch rule per call (kiln/cuda/symbolic.py)
      e["symbols"] = k.symbols;
      e["work"] = k.work;
      if (!k.rowLength.empty())
        e["row_length"] = k.rowLength;
    }
    kernels.append(e);
  }
  for (const ExternCall &x : m.externs) {
    nb::dict e;
    e["name"] = x.name;
    e["function"] = x.function;
    e["kind"] = "gemm";
    e["batched"] = x.batched;
    e["trans_b"] = x.transB;
    e["epilogue"] = x.epilogue;
    e["batch"] = x.batch;
    e["m"] = x.m;
    e["n"] = x.n;
    e["k"] = x.k;
    if (!x.dims.empty()) { // symbolic sizes (kiln/cuda/symbolic.py evaluates them)
      static const char *const keys[] = {"batch", "m", "n", "k"};
      nb::dict dims;
      for (size_t i = 0; i < x.dims.size(); ++i)
        dims[keys[i]] = x.dims[i];
      e["dims"] = dims;
    }
    e["input_type"] = x.inputType;
    e["output_type"] = x.outputType;
    e["args"] = strings(x.args);
    e["location"] = x.location;
    externs.append(e);
  }
  for (const UnsupportedOp &u : m.unsupported) {
    nb::dict e;
    e["function"] = u.function;
    e["op"] = u.op;
    e["location"] = u.location;
    e["reason"] = u.reason;
    e["results"] = strings(u.results);
    unsupported.append(e);
  }
  for (const BufferInfo &b : m.buffers) {
    nb::dict e;
    e["name"] = b.name.substr(b.function.size() + 1);
    e["function"] = b.function;
    e["type"] = b.elementType;
    e["shape"] = ints(b.shape);
    e["bytes"] = b.bytes;
    if (llvm::is_contained(b.shape, -1))
      e["dims"] = strings(b.dims);
    e["role"] = b.role;
    buffers.append(e);
  }
  for (const FunctionPlan &f : m.functions) {
    nb::dict e;
    e["name"] = f.name;
    nb::list steps;
    for (const LaunchStep &s : f.steps) {
      const char *kind = s.kind == LaunchStep::Kernel   ? "kernel"
                         : s.kind == LaunchStep::Extern ? "extern"
                                                        : "unsupported";
      steps.append(nb::make_tuple(kind, s.index));
    }
    e["steps"] = steps;
    e["inputs"] = strings(f.inputs);
    e["results"] = strings(f.results);
    nb::list shapes;
    for (const auto &s : f.resultShapes)
      shapes.append(ints(s));
    e["result_shapes"] = shapes;
    e["result_types"] = strings(f.resultTypes);
    nb::list symbols;
    for (auto [arg, dim] : f.symbols)
      symbols.append(nb::make_tuple(arg, dim));
    e["symbols"] = symbols;
    nb::list constraints;
    for (const auto &[a, b] : f.constraints)
      constraints.append(nb::make_tuple(a, b));
    nb::list bounds;
    for (const auto &[a, b] : f.bounds)
      bounds.append(nb::make_tuple(a, b));
    if (!f.symbols.empty()) {
      e["constraints"] = constraints;
      e["bounds"] = bounds;
    }
    if (!f.symbols.empty()) {
      nb::list dims;
      for (const auto &r : f.resultDims)
        dims.append(strings(r));
      e["result_dims"] = dims;
    }
    functions.append(e);
  }
  d["kernels"] = kernels;
  d["externs"] = externs;
  d["unsupported"] = unsupported;
  d["buffers"] = buffers;
  d["functions"] = functions;
  return d;
}

nb::dict cudaEmit(const std::string &ir, bool prepare, bool fuseRows, bool collect,
                  bool onePassRows, bool vectorize, bool gemmEpilogues) {
  mlir::MLIRContext &ctx = context();
  std::string diags;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    std::string loc;
    llvm::raw_string_ostream ls(loc);
    d.getLocation().print(ls);
    diags += ls.str() + ": " + d.str() + "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx, "captured.mlir");
  if (!module)
    throw nb::value_error(("kiln.cuda: cannot parse the IR:\n" + diags).c_str());
  if (prepare) {
    mlir::PassManager pm(&ctx);
    mlir::kiln::cuda::buildCudaPreparePipeline(pm);
    if (mlir::failed(pm.run(*module)))
      throw nb::value_error(("kiln.cuda: the CUDA prepare pipeline failed:\n" + diags).c_str());
  }
  mlir::kiln::cuda::EmitOptions options;
  options.fuseRows = fuseRows;
  options.onePassRows = onePassRows;
  options.vectorize = vectorize;
  options.gemmEpilogues = gemmEpilogues;
  options.collectUnsupported = collect;
  mlir::FailureOr<mlir::kiln::cuda::CudaModule> cu = mlir::kiln::cuda::emitCuda(*module, options);
  if (mlir::failed(cu))
    throw nb::value_error(("kiln.cuda: " + diags).c_str());
  return toPython(*cu);
}

} // namespace

void registerCudaBindings(nb::module_ &m) {
  m.def("cuda_emit", &cudaEmit, nb::arg("ir"), nb::arg("prepare") = true,
        nb::arg("fuse_rows") = true, nb::arg("collect_unsupported") = false,
        nb::arg("one_pass_rows") = true, nb::arg("vectorize") = true,
        nb::arg("gemm_epilogues") = true,
        "kiln IR text → {'source', 'kernels', 'externs', 'unsupported', 'buffers', "
        "'functions'} (the CUDA emitter's output and launch plan).");
#ifdef KILN_HAVE_NVRTC
  m.def("nvrtc_available", [] { return true; });
  m.def("nvrtc_version", [] { return mlir::kiln::cuda::nvrtcVersion(); });
  m.def(
      "nvrtc_compile",
      [](const std::string &source, int arch, bool cubin, const std::string &name,
         const std::string &cacheDir, uint64_t cacheMaxMb) {
        // Cubin cache: the compile cache's folder (runtime/CompileCache.h),
        // keyed by everything NVRTC's output depends on; the full source is
        // part of the key, so a hit is always this source's binary.
        std::string key = "kiln-cuda-nvrtc v1\nnvrtc " + mlir::kiln::cuda::nvrtcVersion() +
                          "\narch " + std::to_string(arch) + (cubin ? " cubin" : " ptx") + "\n" +
                          source;
        std::optional<rt::DiskCache> cache;
        if (!cacheDir.empty()) {
          std::string warning;
          cache = rt::DiskCache::open(cacheDir + "/cuda", {cacheMaxMb << 20}, warning);
          if (!cache)
            llvm::errs() << "[kiln:cache] warning: compile cache disabled: " << warning << "\n";
        }
        if (cache) {
          rt::CacheLookup hit = cache->load(key);
          if (hit.status == rt::CacheLookup::Status::Hit)
            return nb::make_tuple(nb::bytes(hit.payload.data(), hit.payload.size()), std::string(),
                                  0.0, true);
          if (hit.status == rt::CacheLookup::Status::Corrupt)
            llvm::errs() << "[kiln:cache] warning: invalid compile-cache entry " << hit.message
                         << " (recompiling)\n";
        }
        mlir::kiln::cuda::NvrtcOptions o;
        o.arch = arch;
        o.cubin = cubin;
        llvm::Expected<mlir::kiln::cuda::NvrtcResult> r =
            mlir::kiln::cuda::compileWithNvrtc(source, name, o);
        if (!r)
          throw std::runtime_error("kiln.cuda: " + llvm::toString(r.takeError()));
        std::string ignored; // an unwritable cache only costs the next compile
        if (cache)
          cache->store(key, r->binary, ignored);
        return nb::make_tuple(nb::bytes(r->binary.data(), r->binary.size()), r->log, r->seconds,
                              false);
      },
      nb::arg("source"), nb::arg("arch"), nb::arg("cubin") = true, nb::arg("name") = "kiln.cu",
      nb::arg("cache_dir") = "", nb::arg("cache_max_mb") = 0,
      "Compiles CUDA C++ with NVRTC → (cubin or PTX bytes, log, seconds, from_cache); "
      "with cache_dir, binaries are cached in <cache_dir>/cuda.");
#else
  m.def("nvrtc_available", [] { return false; });
  m.def("nvrtc_version", [] { return std::string(); });
  m.def(
      "nvrtc_compile",
      [](const std::string &, int, bool, const std::string &, const std::string &,
         uint64_t) -> nb::tuple {
        throw std::runtime_error("kiln.cuda: this build of kiln has no NVRTC (the CUDA "
                                 "toolkit was not found at configure time)");
      },
      nb::arg("source"), nb::arg("arch"), nb::arg("cubin") = true, nb::arg("name") = "kiln.cu",
      nb::arg("cache_dir") = "", nb::arg("cache_max_mb") = 0);
#endif
}

} // namespace kiln
