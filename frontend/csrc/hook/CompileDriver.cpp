//===- CompileDriver.cpp - capture, compile, entry ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CompileDriver.h. Ownership: code objects and functions are
// borrowed; entries own the references moved into them from the capture.
//===----------------------------------------------------------------------===//
#include "hook/CompileDriver.h"

#include "CudaEntry.h"
#include "Export.h"
#include "Log.h"
#include "ProgramCompile.h"
#include "TensorInfo.h"
#include "capture/breaks/Resume.h"
#include "capture/values/DynamicShapes.h"
#include "hook/CompiledGrad.h"
#include "hook/InPlaceResults.h"
#include "CallResources.h"
#include "codegen/cpu/JitCompiler.h"
#include "hook/CodeCache.h"
#include "hook/FrontendState.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

/// The folder for one compilation's IR dumps: under KILN_DEBUG_DIR, or
/// with KILN_LOGS=ir alone under a per-process temporary folder (logged).
std::string newDebugDir(const std::string &name) {
  std::string root = options().debugDir;
  if (root.empty() && logEnabled(LogChannel::Ir))
    root = (std::filesystem::temp_directory_path() / ("kiln-debug-" + std::to_string(getpid())))
               .string();
  if (root.empty())
    return "";
  std::string dir = root + "/" + std::to_string(++frontend().compileCounter) + "-" + name;
  for (char &c : dir)
    if (c == '<' || c == '>' || c == ' ')
      c = '_';
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return "";
  log(LogChannel::Ir, "IR after each pass of " + name + ": " + dir);
  return dir;
}

/// Counts and logs what the on-disk compile cache did for one compilation.
/// Invalid entries and failed writes are always reported (on stderr).
void countDiskCache(const std::string &name, const mlir::kiln::CpuCompileInfo &info) {
  Counters &c = counters();
  c.cacheHitsDisk += info.diskHit;
  c.cacheMissesDisk += info.diskMiss;
  c.cacheCorruptDisk += info.diskCorrupt;
  // A refused folder is the same message on every compile: say it once.
  static std::set<std::string> refusals;
  bool repeated = info.cacheMessage.rfind("compile cache disabled", 0) == 0 &&
                  !refusals.insert(info.cacheMessage).second;
  if (!info.cacheMessage.empty() && !repeated)
    llvm::errs() << "[kiln:cache] warning: " << name << ": " << info.cacheMessage << "\n";
  if (logEnabled(LogChannel::Cache) && (info.diskHit || info.diskMiss))
    log(LogChannel::Cache,
        name + (info.diskHit ? ": loaded from the disk cache" : ": compiled (disk cache miss)") +
            (info.diskStored ? ", entry written" : ""));
}

/// Captures a frame of `code` into `cap`, adding the time it takes to the
/// capture-time counter (the symbolic interpretation that builds the graph,
/// without compiling it).
bool timedCapture(PyObject *code, PyObject *func, const FrameView &view, Capture &cap,
                  CaptureFailure &failure) {
  auto t0 = Clock::now();
  bool ok = captureFrame(*frontend().context, reinterpret_cast<PyCodeObject *>(code), func, view,
                         cap, failure);
  counters().captureTimeUs +=
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  return ok;
}

/// The static capture of the frame that `cap` captured with symbolic sizes:
/// static types, the same SymInt reads (DynamicPolicy::shadow).
bool shadowCapture(PyObject *code, PyObject *func, const FrameView &view, const Capture &cap,
                   Capture &stat, CaptureFailure &failure) {
  stat = Capture();
  stat.gradMode = cap.gradMode;
  stat.scalarsAsBreaks = cap.scalarsAsBreaks;
  stat.stopOffset = cap.stopOffset; // a graph break's prefix: the same prefix
  stat.dynamic = cap.dynamic;
  stat.dynamic.shadow = true;
  return timedCapture(code, func, view, stat, failure);
}

/// A capture with symbolic sizes (`captured` says whether it succeeded) is
/// kept when the frame's static capture is the same graph up to those sizes
/// (capture/values/DynamicShapes.h); otherwise logs why under `dynamic` and
/// returns false (the caller specializes).
bool keepSymbolic(PyObject *code, PyObject *func, const FrameView &view, Capture &cap,
                  bool captured, CaptureFailure &failure, size_t entries) {
  std::string why = captured ? ""
                             : "capture failed: " + failure.reason +
                                   (failure.location.empty() ? "" : " at " + failure.location);
  if (captured && cap.dynamic.mode == DynamicPolicy::Mode::Auto &&
      !cap.dynamic.autoDynamic.empty() && entries < kConvBatchStaticEntries &&
      convolvesSymbolicBatch(*cap.module)) {
    ++counters().dynamicSpecialized;
    log(LogChannel::Dynamic, codeName(code) +
                                 ": sizes specialized: a convolution over a batch "
                                 "that became symbolic by itself (kiln.mark_dynamic "
                                 "keeps it: per-image GEMMs, ~2x slower; symbolic "
                                 "from the " +
                                 std::to_string(kConvBatchStaticEntries + 1) +
                                 "th graph of the frame on)");
    return false;
  }
  Capture stat;
  CaptureFailure f2;
  bool ok = captured && shadowCapture(code, func, view, cap, stat, f2);
  if (captured && !ok)
    why = "the static capture failed: " + f2.reason;
  // A symbolic size equal to a static one the graph uses (x's 64 features
  // against a weight's 64) stays static; the others stay symbolic.
  for (int round = 0; ok && round < 4; ++round) {
    std::set<int64_t> collide;
    if (checkAgainstStatic(cap, stat, why, collide))
      return true;
    if (collide.empty())
      break;
    Capture again;
    again.gradMode = cap.gradMode;
    again.scalarsAsBreaks = cap.scalarsAsBreaks;
    again.stopOffset = cap.stopOffset;
    again.dynamic = cap.dynamic;
    again.dynamic.staticSizes.insert(collide.begin(), collide.end());
    CaptureFailure f3;
    if (!timedCapture(code, func, view, again, f3) || again.symbols.empty())
      break;
    for (int64_t v : collide)
      log(LogChannel::Dynamic, codeName(code) + ": size " + std::to_string(v) +
                                   " stays static (a static size of the graph is equal to it)");
    cap = std::move(again);
    failure = f3;
    // The static capture again with the same dims symbolic: code that
    // depends on which dims are symbolic (slices counted from the end)
    // must take the same path in both.
    if (!(ok = shadowCapture(code, func, view, cap, stat, f2)))
      why = "the static capture failed: " + f2.reason;
  }
  ++counters().dynamicSpecialized;
  log(LogChannel::Dynamic, codeName(code) + ": symbolic sizes not kept, sizes specialized: " + why);
  return false;
}

/// For a graph that needs gradients: compiles it with its backward
/// (CompiledGrad.h) unless kiln.config.compiled_backward is off or
/// kiln-autodiff cannot; logs why the eager backward stays (graph channel).
bool compileGradOrSayWhy(Capture &cap, Entry &entry, const mlir::kiln::CpuCompileOptions &copts) {
  std::string why = "kiln.config.compiled_backward is off";
  if (options().compiledBackward && compileWithBackward(cap, entry, copts, why)) {
    ++counters().compiledBackwards;
    return true;
  }
  ++counters().eagerBackwards;
  log(LogChannel::Graph, entry.name + ": backward recomputes eagerly: " + why);
  return false;
}

/// Compiles the captured module for its device into `entry` (fn, program or
/// cudaRunner); false with `failure.reason` set.
bool compileGraph(Capture &cap, const std::string &irText, Entry &entry, CaptureFailure &failure) {
  mlir::kiln::CpuCompileOptions copts;
  copts.debugDir = newDebugDir(entry.name);
  copts.cacheDir = options().cacheDir;
  copts.cacheMaxBytes = options().cacheMaxBytes;
  copts.parallelLoops = options().parallelLoops && torchNumThreads() > 1; // see CpuCompileOptions
  copts.dnnlConvs = options().dnnlConvs;
  copts.layout = options().layout;
  copts.dnnlConvGrads = options().dnnlConvGrads;
  copts.perfJitdump = options().perfJitdump;
  if (!copts.debugDir.empty())
    std::ofstream(copts.debugDir + "/captured.mlir") << irText;
  int device = -1;
  if (!cap.results.empty() && !graphDevice(cap.inputs, cap.guards, device, failure.reason))
    return false;
  // Symbolic sizes on CUDA: kernels take them as arguments
  // (codegen/cuda/CudaSymbolic.cpp); a graph the CUDA emitter cannot emit
  // with them (a GEMM with a symbolic M, ...) fails here with its reason
  // and compileEntry specializes it.
  bool numberInputs = llvm::any_of(cap.inputs, [](const GraphInput &in) {
    return in.kind == GraphInput::Kind::IntCarrier || in.kind == GraphInput::Kind::NumberValue;
  });
  if (numberInputs && (!cap.steps.empty() || device != -1)) {
    failure.reason = "an int or float argument is a graph input of a graph with per-op "
                     "fallbacks or on CUDA (both take tensor inputs only)";
    return false;
  }
  if (!cap.steps.empty()) {
    // Torch calls inside the graph (per-op fallback): segments + calls.
    auto onCpu = [&](const mlir::kiln::CpuCompileInfo &info) { countDiskCache(entry.name, info); };
    return compileProgram(cap, entry, device, copts, onCpu, failure.reason);
  }
  if (!cap.results.empty() && device != -1) // CUDA (or meta) inputs: CudaEntry.h
    return compileForCuda(irText, device, entry, failure.reason);
  if (cap.results.empty())
    return true;
  if (recomputesForAutograd(cap) && compileGradOrSayWhy(cap, entry, copts))
    return true;
  std::string error;
  mlir::kiln::CpuCompileInfo info;
  // Not under autograd: kiln._autograd.apply's results must be new tensors.
  if (!recomputesForAutograd(cap))
    entry.inPlaceOf = markInPlaceResults(cap);
  entry.lazyResults =
      markLazyResults(cap.module->lookupSymbol<mlir::func::FuncOp>("forward"), entry.inPlaceOf);
  entry.fn = compileForCpuWithoutGil(*cap.module, copts, error, &info);
  countDiskCache(entry.name, info);
  if (!entry.fn.entry) {
    failure.reason = "compilation failed: " + error;
    return false;
  }
  return true;
}

/// Logs the guards of a new entry on the guards channel.
void logGuards(const Entry &entry) {
  if (!logEnabled(LogChannel::Guards))
    return;
  std::string g =
      "guards of " + entry.name + ":\n  grad_mode is " + (entry.gradMode ? "enabled" : "disabled");
  for (const Guard &guard : entry.guards)
    g += "\n  " + guard.describe(entry.sources, entry.localNames);
  for (size_t i = 0; i < entry.symbols.size() + entry.sizeGuards.size(); ++i)
    g += "\n  " + describeSymbol(entry, i);
  log(LogChannel::Guards, g);
}

/// Moves what a compiled entry needs at run time out of the capture.
void takeCapture(Capture &cap, Entry &entry) {
  entry.sources = std::move(cap.sources);
  entry.guards = std::move(cap.guards);
  entry.gradMode = cap.gradMode;
  entry.defaultDtype = cap.defaultDtype;
  entry.inputs = std::move(cap.inputs);
  entry.results = std::move(cap.results);
  entry.symbols = std::move(cap.symbols);
  entry.sizeGuards = std::move(cap.sizeGuards);
  entry.outputs = std::move(cap.outputs);
  entry.indexCheck = cap.indexCheck;
  entry.effects = std::move(cap.effects);
  entry.effectValues = std::move(cap.effectValues);
  for (const GraphInput &in : entry.inputs)
    entry.needsAutograd |= cap.gradMode && in.requiresGrad;
}

/// Compiles a successful capture into an entry; null with `failure` set
/// when code generation fails (category Backend).
std::unique_ptr<Entry> finishEntry(PyObject *code, Capture &cap, CaptureFailure &failure,
                                   Clock::time_point t0) {
  auto entry = std::make_unique<Entry>();
  entry->name = codeName(code);
  entry->localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
  std::string irText;
  llvm::raw_string_ostream os(irText);
  cap.module->print(os);
  if (logEnabled(LogChannel::Graph))
    log(LogChannel::Graph,
        "captured " + entry->name + " (" + std::to_string(cap.numOps) + " kiln ops):\n" + irText);
  mlir::OwningOpRef<mlir::ModuleOp> exportCopy; // kiln.export's copy (compileGraph lowers cap's)
  if (exportRecording() && cap.module)
    exportCopy = cap.module->clone();
  if (!compileGraph(cap, irText, *entry, failure)) {
    failure.category = BreakCategory::Backend;
    return nullptr;
  }
  Counters &c = counters();
  for (const CaptureStep &s : cap.steps) {
    if (s.fallback < 0)
      continue;
    ++c.fallbackOps;
    const FallbackCall &call = cap.fallbacks[s.fallback];
    log(LogChannel::Fallbacks, "op " + call.name + " runs through torch (no kiln lowering) in " +
                                   entry->name +
                                   (call.location.empty() ? "" : " at " + call.location));
  }
  takeCapture(cap, *entry);
  if (exportCopy)
    recordExportEntry(std::move(exportCopy), cap, irText, *entry);
  c.dynamicGraphs += !entry->symbols.empty();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  ++c.graphsCompiled;
  c.compileTimeUs += static_cast<long>(ms * 1000);
  logGuards(*entry);
  return entry;
}

/// An eager entry for a failed capture, guarded by what `cap` assumed.
std::unique_ptr<Entry> eagerEntry(PyObject *code, Capture &cap) {
  auto failed = std::make_unique<Entry>();
  failed->eager = true;
  failed->name = codeName(code);
  failed->localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
  failed->sources = std::move(cap.sources);
  failed->guards = std::move(cap.guards);
  failed->gradMode = cap.gradMode;
  failed->defaultDtype = cap.defaultDtype;
  return failed;
}

} // namespace

std::unique_ptr<Entry> compileEntry(PyObject *code, PyObject *func, const FrameView &view,
                                    DynamicPolicy::Mode mode, CodeCache &cache,
                                    CaptureFailure &failure, std::unique_ptr<Entry> &failed,
                                    bool scalarsAsBreaks, size_t entries) {
  auto t0 = Clock::now();
  Capture cap;
  cap.scalarsAsBreaks = scalarsAsBreaks;
  cap.gradMode = gradEnabled();
  cap.dynamic.mode = mode;
  cap.dynamic.autoDynamic = cache.autoDynamic;
  cap.dynamic.localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
  bool captured = timedCapture(code, func, view, cap, failure);
  if (!captured && !cap.dynamicNumbers.empty()) {
    // A use needed the value of a number argument read as a graph value
    // (DynamicNumbers.cpp): captured again with those numbers constant and
    // the sizes as they were; when that gets through, the numbers stay
    // constant in later compilations of the code too (pinned).
    Capture again;
    again.scalarsAsBreaks = scalarsAsBreaks;
    again.gradMode = cap.gradMode;
    again.dynamic = cap.dynamic;
    for (const std::string &d : cap.dynamicNumbers)
      again.dynamic.autoDynamic.erase(d);
    CaptureFailure f2;
    if (timedCapture(code, func, view, again, f2)) {
      for (const std::string &d : cap.dynamicNumbers) {
        cache.autoDynamic.erase(d);
        cache.pinnedNumbers.insert(d);
        log(LogChannel::Dynamic, codeName(code) + ": " + d + " stays constant: " + failure.reason +
                                     (failure.location.empty() ? "" : " at " + failure.location));
      }
      ++counters().dynamicSpecialized;
      cap = std::move(again);
      failure = f2;
      captured = true;
    }
  }
  // Specializes: captures again with every size static.
  auto specialize = [&]() {
    Capture again;
    again.scalarsAsBreaks = scalarsAsBreaks;
    again.gradMode = gradEnabled();
    again.dynamic.forceStatic = true;
    failure = CaptureFailure();
    captured = timedCapture(code, func, view, again, failure);
    cap = std::move(again);
  };
  bool symbolic = !cap.symbols.empty();
  if (symbolic && !keepSymbolic(code, func, view, cap, captured, failure, entries)) {
    specialize();
    symbolic = false;
  }
  // A float argument read as a graph value (DynamicNumbers.cpp) that a use
  // needed as a constant: the float is constant again.
  bool floats = cap.readDynamicFloat;
  if (!captured && floats && !symbolic) {
    ++counters().dynamicSpecialized;
    log(LogChannel::Dynamic, codeName(code) + ": float arguments specialized: " + failure.reason +
                                 (failure.location.empty() ? "" : " at " + failure.location));
    specialize();
    floats = false;
  }
  std::unique_ptr<Entry> entry = captured ? finishEntry(code, cap, failure, t0) : nullptr;
  if (captured && !entry && (symbolic || floats)) {
    ++counters().dynamicSpecialized;
    log(LogChannel::Dynamic,
        codeName(code) + ": symbolic sizes not kept, sizes specialized: " + failure.reason);
    specialize();
    entry = captured ? finishEntry(code, cap, failure, t0) : nullptr;
  }
  if (!entry)
    failed = eagerEntry(code, cap);
  return entry;
}

std::unique_ptr<Entry> compileBreak(PyObject *code, PyObject *func, const FrameView &view,
                                    CaptureFailure &failure, DynamicPolicy::Mode mode,
                                    const std::set<std::string> &autoDynamic, bool scalarsAsBreaks,
                                    size_t entries) {
  auto t0 = Clock::now();
  std::string why;
  int start = planBreak(code, failure.rootOffset, why);
  auto prefix = [&](bool forceStatic) {
    Capture cap;
    cap.scalarsAsBreaks = scalarsAsBreaks;
    cap.gradMode = gradEnabled();
    cap.stopOffset = start;
    cap.dynamic.mode = mode;
    cap.dynamic.autoDynamic = autoDynamic;
    cap.dynamic.localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
    cap.dynamic.forceStatic = forceStatic;
    return cap;
  };
  // The prefix with symbolic sizes where the frame's are (kept under the
  // same check as a whole frame's, keepSymbolic), else static.
  Capture cap = prefix(false);
  CaptureFailure again;
  std::shared_ptr<ResumePlan> plan;
  bool captured = start >= 0 && timedCapture(code, func, view, cap, again);
  auto captureStatic = [&]() {
    cap = prefix(true);
    again = CaptureFailure();
    captured = timedCapture(code, func, view, cap, again);
  };
  if (captured && !cap.symbols.empty() &&
      !keepSymbolic(code, func, view, cap, captured, again, entries))
    captureStatic();
  else if (start >= 0 && !captured && (!cap.symbols.empty() || cap.readDynamicFloat))
    captureStatic(); // a size or number argument a use needed as a constant
  if (start >= 0 && !captured)
    why = again.reason;
  else if (start >= 0)
    plan = buildResumePlan(code, start, failure.rootOffset, cap.state, why);
  std::unique_ptr<Entry> entry = plan ? finishEntry(code, cap, again, t0) : nullptr;
  if (plan && !entry && (!cap.symbols.empty() || cap.readDynamicFloat)) {
    captureStatic(); // a backend refused the graph's symbolic sizes or number inputs
    plan = captured ? buildResumePlan(code, start, failure.rootOffset, cap.state, why) : nullptr;
    entry = plan ? finishEntry(code, cap, again, t0) : nullptr;
  }
  if (plan && !entry)
    why = again.reason;
  if (!entry) {
    failure.reason += "; cannot resume after it: " + why;
    return nullptr;
  }
  if (CodeCache *stub = cacheOf(plan->stub.get()))
    stub->stub = true;
  plan->where = failure.reason + (failure.location.empty() ? "" : " at " + failure.location);
  entry->resume = std::move(plan);
  return entry;
}

} // namespace kiln
