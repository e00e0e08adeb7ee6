//===- Hook.cpp - frame interception, per-code caches, compiled calls --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Hook.h and the `kiln_on_frame` callback of EvalFrameHook.c.
// Hot path (cache hit): resolve sources, check guards, run the entry.
// Ownership: frame locals/globals are borrowed for the duration of the call;
// entries hold strong references to guarded objects.
//===----------------------------------------------------------------------===//
#include "Hook.h"

#include "CudaEntry.h"
#include "Entry.h"
#include "Log.h"
#include "ProgramCompile.h"
#include "capture/breaks/Resume.h"
#include "TensorInfo.h"
#include "capture/Capture.h"
#include "capture/values/DynamicShapes.h"
#include "registration/Registration.h"
#include "codegen/cpu/JitCompiler.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include <unistd.h>

extern "C" void kiln_install_hook(int on);

namespace kiln {
namespace {

/// Per-thread hook state.
struct ThreadState {
  int active = 0; ///< >0 inside callCompiled
  int busy = 0;   ///< >0 while kiln's own code runs Python
  PyObject *entryCode = nullptr;
  bool fullgraph = false;
  PyObject *autogradApply = nullptr;
  int dynamic = 2; ///< callCompiled's `dynamic`
};
thread_local ThreadState tls;

/// Cache of one code object (stored in its co_extra slot).
struct CodeCache {
  /// Compiled entries and failed captures (Entry::eager), tried in order.
  std::vector<std::unique_ptr<Entry>> entries;
  bool warnedLimit = false;
  int inKiln = -1;   ///< the code is kiln's own (-1: not yet known)
  bool stub = false; ///< a graph break's stub (kiln/_resume.py): never captured
  /// dynamic=None: input dims whose size change caused a recompile
  /// ("<source>#<dim>"); later captures make them symbolic.
  std::set<std::string> autoDims;
};

Py_ssize_t gExtraIndex = -1;
std::set<CodeCache *> gCaches;
std::vector<std::string> gSkipPrefixes;
std::string gKilnPrefix; ///< kiln's own package: never captured, even as the entry
std::map<std::string, long> gStats;
/// Counters bumped on every call, resolved once (resetCaches zeroes the
/// map's values and never erases them, so these stay valid).
long &gFrames = gStats["frames"];
long &gCacheHits = gStats["cache_hits"];
long &gCompiledCalls = gStats["compiled_calls"];
std::unique_ptr<mlir::MLIRContext> gContext;
long gCompileCounter = 0;

void freeCodeCache(void *p) {
  auto *c = static_cast<CodeCache *>(p);
  gCaches.erase(c);
  delete c;
}

CodeCache *cacheOf(PyObject *code) {
  void *extra = nullptr;
  if (_PyCode_GetExtra(code, gExtraIndex, &extra) < 0) {
    PyErr_Clear();
    return nullptr;
  }
  if (!extra) {
    auto *c = new CodeCache();
    if (_PyCode_SetExtra(code, gExtraIndex, c) < 0) {
      PyErr_Clear();
      delete c;
      return nullptr;
    }
    gCaches.insert(c);
    extra = c;
  }
  return static_cast<CodeCache *>(extra);
}

std::string codeFile(PyObject *code) {
  PyObject *f = reinterpret_cast<PyCodeObject *>(code)->co_filename;
  const char *c = PyUnicode_AsUTF8(f);
  return c ? c : "";
}

std::string codeName(PyObject *code) {
  const char *c = PyUnicode_AsUTF8(reinterpret_cast<PyCodeObject *>(code)->co_qualname);
  return c ? c : "?";
}

bool isSkipped(PyObject *code) {
  std::string file = codeFile(code);
  if (file.empty() || file[0] == '<')
    return file.rfind("<frozen", 0) == 0;
  for (const std::string &p : gSkipPrefixes)
    if (file.rfind(p, 0) == 0)
      return true;
  return false;
}

/// RAII: marks kiln's own Python calls so the hook ignores their frames.
struct Busy {
  Busy() { ++tls.busy; }
  ~Busy() { --tls.busy; }
};

/// RAII: user code runs again (a graph break's eager part and resume).
struct Unbusy {
  int saved = tls.busy;
  Unbusy() { tls.busy = 0; }
  ~Unbusy() { tls.busy = saved; }
};

/// Runs a hit entry and, for a graph break's prefix, the rest of the frame.
PyObject *runEntry(Entry &entry, const std::vector<PyRef> &values, PyObject *func, PyObject *code,
                   PyObject **locals);
PyObject *runFrame(Entry &entry, const std::vector<PyRef> &values, PyObject *func, PyObject *code,
                   PyObject **locals) {
  PyObject *r = runEntry(entry, values, func, code, locals);
  if (!r || !entry.resume)
    return r;
  PyRef state = PyRef::steal(r);
  Unbusy user;
  return runBreak(*entry.resume, state.get(), values, func);
}

/// The folder for one compilation's IR dumps: under KILN_DEBUG_DIR, or
/// with KILN_LOGS=ir alone under a per-process temporary folder (logged).
std::string newDebugDir(const std::string &name) {
  std::string root = options().debugDir;
  if (root.empty() && logEnabled(LogChannel::Ir))
    root = (std::filesystem::temp_directory_path() / ("kiln-debug-" + std::to_string(getpid())))
               .string();
  if (root.empty())
    return "";
  std::string dir = root + "/" + std::to_string(++gCompileCounter) + "-" + name;
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

std::unique_ptr<Entry> finishEntry(PyObject *code, Capture &cap, CaptureFailure &failure,
                                   std::chrono::steady_clock::time_point t0);

/// Counts and logs what the on-disk compile cache did for one compilation.
/// Invalid entries and failed writes are always reported (on stderr).
void countDiskCache(const std::string &name, const mlir::kiln::CpuCompileInfo &info) {
  gStats["cache_hits_disk"] += info.diskHit;
  gStats["cache_misses_disk"] += info.diskMiss;
  gStats["cache_corrupt_disk"] += info.diskCorrupt;
  if (!info.cacheMessage.empty())
    llvm::errs() << "[kiln:cache] warning: " << name << ": " << info.cacheMessage << "\n";
  if (logEnabled(LogChannel::Cache) && (info.diskHit || info.diskMiss))
    log(LogChannel::Cache,
        name + (info.diskHit ? ": loaded from the disk cache" : ": compiled (disk cache miss)") +
            (info.diskStored ? ", entry written" : ""));
}

/// Adds the time since `t0` to the capture-time counter: the symbolic
/// interpretation that builds the graph, without compiling it.
void countCaptureTime(std::chrono::steady_clock::time_point t0) {
  gStats["capture_time_us"] +=
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
}

/// A capture with symbolic sizes (`captured` says whether it succeeded) is
/// kept when the frame's static capture is the same graph up to those sizes
/// (capture/values/DynamicShapes.h); otherwise logs why under `dynamic` and
/// returns false (the caller specializes).
bool keepSymbolic(PyObject *code, PyObject *func, const FrameView &view, Capture &cap,
                  bool captured, CaptureFailure &failure) {
  std::string why = captured ? ""
                             : "capture failed: " + failure.reason +
                                   (failure.location.empty() ? "" : " at " + failure.location);
  Capture stat;
  stat.gradMode = cap.gradMode;
  stat.dynamic = cap.dynamic;
  stat.dynamic.shadow = true; // static types, same SymInt reads (DynamicPolicy::shadow)
  CaptureFailure f2;
  auto tc = std::chrono::steady_clock::now();
  bool ok = captured &&
            captureFrame(*gContext, reinterpret_cast<PyCodeObject *>(code), func, view, stat, f2);
  countCaptureTime(tc);
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
    again.dynamic = cap.dynamic;
    again.dynamic.staticSizes.insert(collide.begin(), collide.end());
    CaptureFailure f3;
    tc = std::chrono::steady_clock::now();
    bool ok3 =
        captureFrame(*gContext, reinterpret_cast<PyCodeObject *>(code), func, view, again, f3);
    countCaptureTime(tc);
    if (!ok3 || again.symbols.empty())
      break;
    for (int64_t v : collide)
      log(LogChannel::Dynamic, codeName(code) + ": size " + std::to_string(v) +
                                   " stays static (a static size of the graph is equal to it)");
    cap = std::move(again);
    failure = f3;
  }
  ++gStats["dynamic_specialized"];
  log(LogChannel::Dynamic, codeName(code) + ": symbolic sizes not kept, sizes specialized: " + why);
  return false;
}

/// Captures and compiles a new entry; null (no Python error) on failure,
/// with `failed` set to an eager entry guarded by what the capture had
/// assumed up to the failure (the same assumptions fail the same way).
std::unique_ptr<Entry> compileEntry(PyObject *code, PyObject *func, const FrameView &view,
                                    CaptureFailure &failure, std::unique_ptr<Entry> &failed,
                                    const std::set<std::string> &autoDims) {
  auto t0 = std::chrono::steady_clock::now();
  Capture cap;
  cap.gradMode = gradEnabled();
  cap.dynamic.mode = tls.dynamic == 1   ? DynamicPolicy::Mode::All
                     : tls.dynamic == 2 ? DynamicPolicy::Mode::Auto
                                        : DynamicPolicy::Mode::Static;
  cap.dynamic.autoDims = autoDims;
  cap.dynamic.localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
  auto fail = [&]() -> std::unique_ptr<Entry> {
    failed = std::make_unique<Entry>();
    failed->eager = true;
    failed->name = codeName(code);
    failed->localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
    failed->sources = std::move(cap.sources);
    failed->guards = std::move(cap.guards);
    failed->gradMode = cap.gradMode;
    failed->defaultDtype = cap.defaultDtype;
    return nullptr;
  };
  bool captured =
      captureFrame(*gContext, reinterpret_cast<PyCodeObject *>(code), func, view, cap, failure);
  countCaptureTime(t0);
  // Specializes: captures again with every size static.
  auto specialize = [&]() {
    Capture again;
    again.gradMode = gradEnabled();
    again.dynamic.forceStatic = true;
    failure = CaptureFailure();
    auto tc = std::chrono::steady_clock::now();
    captured =
        captureFrame(*gContext, reinterpret_cast<PyCodeObject *>(code), func, view, again, failure);
    countCaptureTime(tc);
    cap = std::move(again);
  };
  bool symbolic = !cap.symbols.empty();
  if (symbolic && !keepSymbolic(code, func, view, cap, captured, failure)) {
    specialize();
    symbolic = false;
  }
  if (!captured)
    return fail();
  auto entry = finishEntry(code, cap, failure, t0);
  if (!entry && symbolic) {
    ++gStats["dynamic_specialized"];
    log(LogChannel::Dynamic,
        codeName(code) + ": symbolic sizes not kept, sizes specialized: " + failure.reason);
    specialize();
    if (!captured)
      return fail();
    entry = finishEntry(code, cap, failure, t0);
  }
  return entry ? std::move(entry) : fail();
}

/// Compiles a successful capture into an entry; null with `failure` set
/// when code generation fails.
std::unique_ptr<Entry> finishEntry(PyObject *code, Capture &cap, CaptureFailure &failure,
                                   std::chrono::steady_clock::time_point t0) {
  auto entry = std::make_unique<Entry>();
  entry->name = codeName(code);
  entry->localNames = localNames(reinterpret_cast<PyCodeObject *>(code));
  std::string irText;
  llvm::raw_string_ostream os(irText);
  cap.module->print(os);
  if (logEnabled(LogChannel::Graph))
    log(LogChannel::Graph,
        "captured " + entry->name + " (" + std::to_string(cap.numOps) + " kiln ops):\n" + irText);
  mlir::kiln::CpuCompileOptions copts;
  copts.debugDir = newDebugDir(entry->name);
  copts.cacheDir = options().cacheDir;
  copts.parallelLoops = options().parallelLoops && torchNumThreads() > 1; // see CpuCompileOptions
  copts.perfJitdump = options().perfJitdump;
  if (!copts.debugDir.empty())
    std::ofstream(copts.debugDir + "/captured.mlir") << irText;
  int device = -1;
  if (!cap.results.empty() && !graphDevice(cap.inputs, cap.guards, device, failure.reason))
    return nullptr;
  if (!cap.symbols.empty() && device != -1) {
    failure.reason = "the CUDA backend compiles static shapes only";
    return nullptr;
  }
  if (!cap.steps.empty()) {
    // Torch calls inside the graph (per-op fallback): segments + calls.
    auto onCpu = [&](const mlir::kiln::CpuCompileInfo &info) { countDiskCache(entry->name, info); };
    if (!compileProgram(cap, *entry, device, copts, onCpu, failure.reason))
      return nullptr;
  } else if (!cap.results.empty() && device != -1) {
    // CUDA (or meta) inputs: the CUDA backend (frontend/csrc/CudaEntry.h).
    if (!compileForCuda(irText, device, *entry, failure.reason))
      return nullptr;
  } else if (!cap.results.empty()) {
    std::string error;
    mlir::kiln::CpuCompileInfo info;
    entry->fn = mlir::kiln::compileForCpu(*cap.module, "forward", copts, error, &info);
    countDiskCache(entry->name, info);
    if (!entry->fn.entry) {
      failure.reason = "compilation failed: " + error;
      return nullptr;
    }
  }
  entry->sources = std::move(cap.sources);
  entry->guards = std::move(cap.guards);
  entry->gradMode = cap.gradMode;
  entry->defaultDtype = cap.defaultDtype;
  entry->inputs = std::move(cap.inputs);
  entry->results = std::move(cap.results);
  entry->symbols = std::move(cap.symbols);
  entry->sizeGuards = std::move(cap.sizeGuards);
  gStats["dynamic_graphs"] += !entry->symbols.empty();
  entry->outputs = std::move(cap.outputs);
  for (const CaptureStep &s : cap.steps) {
    if (s.fallback < 0)
      continue;
    ++gStats["fallback_ops"];
    const FallbackCall &c = cap.fallbacks[s.fallback];
    log(LogChannel::Fallbacks, "op " + c.name + " runs through torch (no kiln lowering) in " +
                                   entry->name + (c.location.empty() ? "" : " at " + c.location));
  }
  entry->effects = std::move(cap.effects);
  entry->effectValues = std::move(cap.effectValues);
  for (const GraphInput &in : entry->inputs)
    entry->needsAutograd |= cap.gradMode && in.requiresGrad;
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++gStats["graphs_compiled"];
  gStats["compile_time_us"] += static_cast<long>(ms * 1000);
  if (logEnabled(LogChannel::Guards)) {
    std::string g = "guards of " + entry->name + ":\n  grad_mode is " +
                    (entry->gradMode ? "enabled" : "disabled");
    for (const Guard &guard : entry->guards)
      g += "\n  " + guard.describe(entry->sources, entry->localNames);
    for (size_t i = 0; i < entry->symbols.size() + entry->sizeGuards.size(); ++i)
      g += "\n  " + describeSymbol(*entry, i);
    log(LogChannel::Guards, g);
  }
  return entry;
}

/// After a failed capture that stopped inside the root frame's
/// instruction at failure.rootOffset: captures the frame again up to that
/// instruction and compiles it as a graph break's prefix (the rest runs
/// through kiln/_resume.py's stub and resume function). Null, with the
/// reason it cannot resume appended to `failure`, when that is impossible.
std::unique_ptr<Entry> compileBreak(PyObject *code, PyObject *func, const FrameView &view,
                                    CaptureFailure &failure) {
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  int start = planBreak(code, failure.rootOffset, why);
  Capture cap;
  cap.gradMode = gradEnabled();
  cap.stopOffset = start;
  CaptureFailure again;
  std::shared_ptr<ResumePlan> plan;
  auto tc = std::chrono::steady_clock::now();
  bool captured = start >= 0 && captureFrame(*gContext, reinterpret_cast<PyCodeObject *>(code),
                                             func, view, cap, again);
  countCaptureTime(tc);
  if (start >= 0 && !captured)
    why = again.reason;
  else if (start >= 0)
    plan = buildResumePlan(code, start, failure.rootOffset, cap.state, why);
  std::unique_ptr<Entry> entry = plan ? finishEntry(code, cap, again, t0) : nullptr;
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

/// dynamic=None: when tensor guard `g` of `e` failed because sizes
/// changed (same rank and dtype, old and new sizes >= 2), marks those dims
/// of its source symbolic for the next captures of `code` (Dynamo's
/// automatic dynamic shapes).
void markChangedSizes(CodeCache &cache, const Entry &e, const Guard &g,
                      const std::vector<PyRef> &values, PyObject *code) {
  if (g.kind != Guard::Kind::Tensor || g.source < 0 || !values[g.source])
    return;
  TensorMeta meta;
  if (!isTensor(values[g.source].get()) || !readTensorMeta(values[g.source].get(), meta)) {
    PyErr_Clear();
    return;
  }
  if (meta.sizes.size() != g.sizes.size() || meta.dtype != g.dtype)
    return;
  std::string desc = e.sources.describe(g.source, e.localNames);
  for (size_t d = 0; d < g.sizes.size(); ++d)
    if (g.sizes[d] >= 2 && meta.sizes[d] >= 2 && meta.sizes[d] != g.sizes[d] &&
        cache.autoDims.insert(desc + "#" + std::to_string(d)).second)
      log(LogChannel::Dynamic, codeName(code) + ": " + desc + ".size(" + std::to_string(d) +
                                   ") changed from " + std::to_string(g.sizes[d]) + " to " +
                                   std::to_string(meta.sizes[d]) +
                                   "; it is symbolic in the next compilations");
}

/// For each graph result, the index path from the Python result down to
/// it (e.g. `return x, (h, c)` → h is (1, 0)); a tuple of tuples.
PyObject *resultPaths(const Entry &entry) {
  std::vector<PyRef> paths(entry.results.size());
  std::vector<PyRef> path; // list indices or dict keys
  size_t pos = 0;
  std::function<void()> walk = [&]() {
    const OutputSlot &s = entry.outputs[pos++];
    if (s.kind == OutputSlot::Kind::Tuple || s.kind == OutputSlot::Kind::List ||
        s.kind == OutputSlot::Kind::Dict) {
      for (int i = 0; i < s.index; ++i) {
        path.push_back(s.kind == OutputSlot::Kind::Dict
                           ? PyRef::borrow(PyTuple_GET_ITEM(s.constant.get(), i))
                           : PyRef::steal(PyLong_FromLong(i)));
        walk();
        path.pop_back();
      }
      return;
    }
    if (s.kind != OutputSlot::Kind::Graph || paths[s.index])
      return;
    PyRef t = PyRef::steal(PyTuple_New(path.size()));
    for (size_t i = 0; i < path.size(); ++i) {
      Py_INCREF(path[i].get());
      PyTuple_SET_ITEM(t.get(), i, path[i].get());
    }
    paths[s.index] = t;
  };
  walk();
  PyObject *all = PyTuple_New(paths.size());
  for (size_t i = 0; i < paths.size(); ++i)
    PyTuple_SET_ITEM(all, i, paths[i].release());
  return all;
}

/// Calls the original function eagerly with the hook off (for backward).
PyObject *makeRecompute(PyObject *func, PyObject *code, PyObject **locals) {
  auto *co = reinterpret_cast<PyCodeObject *>(code);
  int n = co->co_argcount, nkw = co->co_kwonlyargcount;
  PyRef args = PyRef::steal(PyTuple_New(n));
  for (int i = 0; i < n; ++i) {
    Py_XINCREF(locals[i]);
    PyTuple_SET_ITEM(args.get(), i, locals[i] ? locals[i] : (Py_INCREF(Py_None), Py_None));
  }
  PyRef kwargs = PyRef::steal(PyDict_New());
  for (int i = n; i < n + nkw; ++i)
    PyDict_SetItem(kwargs.get(), PyTuple_GET_ITEM(co->co_localsplusnames, i), locals[i]);
  // *args and **kwargs follow the named parameters.
  int extra = n + nkw;
  if (co->co_flags & CO_VARARGS) {
    PyObject *rest = locals[extra++];
    if (rest && PyTuple_Check(rest)) {
      PyRef all = PyRef::steal(PySequence_Concat(args.get(), rest));
      if (!all)
        return nullptr;
      args = all;
    }
  }
  if (co->co_flags & CO_VARKEYWORDS) {
    PyObject *more = locals[extra];
    if (more && PyDict_Check(more) && PyDict_Update(kwargs.get(), more) < 0)
      return nullptr;
  }
  PyRef partial = PyRef::steal(PyImport_ImportModule("functools"));
  PyRef eager = PyRef::steal(PyImport_ImportModule("kiln._C"));
  if (!partial || !eager)
    return nullptr;
  PyRef callEagerFn = PyRef::steal(PyObject_GetAttrString(eager.get(), "call_eager"));
  PyRef partialFn = PyRef::steal(PyObject_GetAttrString(partial.get(), "partial"));
  PyRef pargs = PyRef::steal(PyTuple_Pack(4, callEagerFn.get(), func, args.get(), kwargs.get()));
  return PyObject_Call(partialFn.get(), pargs.get(), nullptr);
}

/// Runs a hit entry. New reference or null with a Python error.
PyObject *runEntry(Entry &entry, const std::vector<PyRef> &values, PyObject *func, PyObject *code,
                   PyObject **locals) {
  llvm::SmallVector<PyObject *, 16> inputs;
  inputs.reserve(entry.inputs.size());
  for (const GraphInput &in : entry.inputs)
    inputs.push_back(values[in.source].get());
  ++gCompiledCalls;
  if (!entry.needsAutograd) {
    std::vector<PyRef> results;
    if (!runGraph(entry, inputs, results))
      return nullptr;
    PyObject *r = assembleResult(entry, results, inputs);
    if (r && !entry.effects.empty() && !replaySideEffects(entry, results, inputs, values)) {
      Py_DECREF(r);
      return nullptr;
    }
    return r;
  }
  // Gradients needed: kiln._autograd.apply(run, recompute, inputs).
  PyRef run = PyRef::steal(PyCapsule_New(&entry, "kiln.Entry", nullptr));
  PyRef runner = PyRef::steal(PyImport_ImportModule("kiln._C"));
  PyRef runFn = runner ? PyRef::steal(PyObject_GetAttrString(runner.get(), "_run_entry")) : PyRef();
  PyRef partial = PyRef::steal(PyImport_ImportModule("functools"));
  PyRef partialFn =
      partial ? PyRef::steal(PyObject_GetAttrString(partial.get(), "partial")) : PyRef();
  if (!run || !runFn || !partialFn)
    return nullptr;
  PyRef bound =
      PyRef::steal(PyObject_CallFunctionObjArgs(partialFn.get(), runFn.get(), run.get(), nullptr));
  // The backward differentiates the eager result's tensors at the graph
  // results' positions (the result may hold inputs, constants, nesting).
  // A break's prefix recomputes through the prefix function (the original
  // code returning the state at the break).
  PyRef eagerFn =
      entry.resume ? PyRef::steal(prefixFunction(*entry.resume, func)) : PyRef::borrow(func);
  PyRef eager = eagerFn ? PyRef::steal(makeRecompute(eagerFn.get(), code, locals)) : PyRef();
  PyRef paths = PyRef::steal(resultPaths(entry));
  PyRef autogradMod = PyRef::steal(PyImport_ImportModule("kiln._autograd"));
  PyRef select =
      autogradMod ? PyRef::steal(PyObject_GetAttrString(autogradMod.get(), "select")) : PyRef();
  PyRef recompute = eager && select ? PyRef::steal(PyObject_CallFunctionObjArgs(
                                          select.get(), paths.get(), eager.get(), nullptr))
                                    : PyRef();
  PyRef inTuple = PyRef::steal(PyTuple_New(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    Py_INCREF(inputs[i]);
    PyTuple_SET_ITEM(inTuple.get(), i, inputs[i]);
  }
  if (!bound || !recompute)
    return nullptr;
  PyRef outs = PyRef::steal(PyObject_CallFunctionObjArgs(tls.autogradApply, bound.get(),
                                                         recompute.get(), inTuple.get(), nullptr));
  if (!outs)
    return nullptr;
  std::vector<PyRef> results;
  if (PyTuple_Check(outs.get()))
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(outs.get()); ++i)
      results.push_back(PyRef::borrow(PyTuple_GET_ITEM(outs.get(), i)));
  else
    results.push_back(outs);
  return assembleResult(entry, results, inputs);
}

} // namespace

Options &options() {
  static Options o;
  return o;
}

namespace {
/// kiln.explain's collector (a strong reference), or null for stderr. A raw
/// pointer: a static PyRef would decref after the interpreter is gone.
PyObject *gLogSink = nullptr;
} // namespace

void setLogSink(PyObject *sink) {
  Py_XINCREF(sink);
  Py_XSETREF(gLogSink, sink);
}

void log(LogChannel channel, const std::string &message) {
  static const char *names[] = {"graph", "graph_breaks", "recompiles", "guards",
                                "ir",    "cache",        "fallbacks",  "dynamic"};
  if (!logEnabled(channel))
    return;
  const char *name = names[static_cast<int>(channel)];
  if (gLogSink) {
    // Called with the GIL held; a pending exception of the caller survives.
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyRef text =
        PyRef::steal(PyUnicode_DecodeUTF8(message.data(), (Py_ssize_t)message.size(), "replace"));
    PyRef r =
        text ? PyRef::steal(PyObject_CallFunction(gLogSink, "sO", name, text.get())) : PyRef();
    if (!r)
      PyErr_WriteUnraisable(gLogSink);
    PyErr_Restore(type, value, tb);
    return;
  }
  llvm::errs() << "[kiln:" << name << "] " << message << "\n";
}

bool initHook() {
  if (gContext)
    return true;
  if (!initTorchHandles())
    return false;
  gExtraIndex = _PyEval_RequestCodeExtraIndex(freeCodeCache);
  if (gExtraIndex < 0) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: no free code-extra slot");
    return false;
  }
  for (const char *mod : {"torch", "kiln", "os"}) {
    PyRef m = PyRef::steal(PyImport_ImportModule(mod));
    PyRef file = m ? PyRef::steal(PyObject_GetAttrString(m.get(), "__file__")) : PyRef();
    if (!file)
      return false;
    std::filesystem::path p(PyUnicode_AsUTF8(file.get()));
    gSkipPrefixes.push_back(p.parent_path().string() + "/");
    if (std::string(mod) == "kiln")
      gKilnPrefix = gSkipPrefixes.back();
  }
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  mlir::kiln::registerAllPasses();
  gContext = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  gContext->loadAllAvailableDialects();
  kiln_install_hook(1);
  return true;
}

std::map<std::string, long> stats() {
  // Every documented counter is present (zero until it first counts).
  std::map<std::string, long> s = gStats;
  for (const char *k : {"frames", "graphs_compiled", "compiled_calls", "cache_hits", "recompiles",
                        "graph_breaks", "eager_calls", "compile_time_us", "capture_time_us",
                        "cache_hits_disk", "cache_misses_disk", "cache_corrupt_disk"})
    s.emplace(k, 0);
  s.emplace("dynamic_graphs", 0);
  s.emplace("dynamic_specialized", 0);
  s.emplace("fallback_ops", 0);
  s["fallback_calls"] = gFallbackCalls;
  return s;
}

void resetCaches() {
  for (CodeCache *c : gCaches) {
    c->entries.clear();
    c->warnedLimit = false;
    c->autoDims.clear();
  }
  for (auto &kv : gStats)
    kv.second = 0;
  gFallbackCalls = 0;
}

PyObject *callCompiled(PyObject *fn, PyObject *args, PyObject *kwargs, bool fullgraph,
                       PyObject *autogradApply, int dynamic) {
  PyRef code = PyFunction_Check(fn) ? PyRef::borrow(PyFunction_GET_CODE(fn))
                                    : PyRef::steal(PyObject_GetAttrString(fn, "__code__"));
  if (!code)
    return nullptr;
  ThreadState saved = tls;
  tls.active = 1;
  tls.busy = 0;
  tls.entryCode = code.get();
  tls.fullgraph = fullgraph;
  tls.autogradApply = autogradApply;
  tls.dynamic = dynamic;
  PyObject *r = PyObject_Call(fn, args, kwargs);
  tls = saved;
  return r;
}

PyObject *callEager(PyObject *fn, PyObject *args, PyObject *kwargs) {
  Busy busy;
  return PyObject_Call(fn, args, kwargs);
}

} // namespace kiln

using namespace kiln;

extern "C" int kiln_hook_active(void) { return tls.active > 0 && tls.busy == 0; }

extern "C" PyObject *kiln_on_frame(PyObject *code, PyObject *func, PyObject **locals, int numLocals,
                                   PyObject *globals, PyObject *builtins, int *handled) {
  *handled = 0;
  bool isEntry = code == tls.entryCode;
  if (!isEntry && isSkipped(code))
    return nullptr;
  CodeCache *cache = cacheOf(code);
  if (!cache)
    return nullptr;
  // kiln's own trampolines (e.g. calling a module with hooks) run eagerly;
  // the frames they call are still intercepted.
  if (cache->inKiln < 0)
    cache->inKiln = !gKilnPrefix.empty() && codeFile(code).rfind(gKilnPrefix, 0) == 0;
  if ((isEntry && cache->inKiln) || cache->stub)
    return nullptr;
  Busy busy;
  ++gFrames;
  FrameView view{locals, numLocals, globals, builtins, func};
  bool grad = gradEnabled();
  PyObject *defDtype = defaultDtype();
  // The resolved values, in a per-thread buffer reused across calls (the
  // hook does not nest while `busy`; a nested use gets its own buffer).
  static thread_local std::vector<PyRef> tlsValues;
  static thread_local int tlsValuesDepth = 0;
  std::vector<PyRef> ownValues;
  std::vector<PyRef> &values = tlsValuesDepth++ == 0 ? tlsValues : ownValues;
  struct Release {
    std::vector<PyRef> &v;
    ~Release() {
      v.clear(); // drop the references now, keep the capacity
      --tlsValuesDepth;
    }
  } release{values};
  std::string firstFailure;
  for (auto &e : cache->entries) {
    int bad = e->sources.resolve(view, values);
    int failed = bad >= 0                      ? -2
                 : e->gradMode != grad         ? -3
                 : e->defaultDtype != defDtype ? -4
                                               : checkGuards(e->guards, values);
    int badSymbol = -1;
    if (failed == -1 && !e->symbols.empty()) {
      llvm::SmallVector<PyObject *, 8> ins;
      for (const GraphInput &in : e->inputs)
        ins.push_back(values[in.source].get());
      if ((badSymbol = checkSymbols(*e, ins)) >= 0)
        failed = -5;
    }
    if (failed >= 0 && tls.dynamic == 2 && !e->eager)
      markChangedSizes(*cache, *e, e->guards[failed], values, code);
    if (failed == -1 && e->eager) {
      ++gStats["eager_calls"];
      if (tls.fullgraph) {
        *handled = 1;
        PyErr_Format(PyExc_RuntimeError, "kiln (fullgraph=True): graph break in %s",
                     e->eagerReason.c_str());
      }
      return nullptr;
    }
    if (failed == -1 && e->resume && tls.fullgraph) {
      *handled = 1;
      PyErr_Format(PyExc_RuntimeError, "kiln (fullgraph=True): graph break in %s: %s",
                   codeName(code).c_str(), e->resume->where.c_str());
      return nullptr;
    }
    if (failed == -1) {
      ++gCacheHits;
      *handled = 1;
      return runFrame(*e, values, func, code, locals);
    }
    if (firstFailure.empty())
      firstFailure = failed == -3   ? "grad mode changed"
                     : failed == -4 ? "torch's default dtype changed"
                     : failed == -5 ? "size relation " + describeSymbol(*e, badSymbol) + " failed"
                     : failed == -2
                         ? e->sources.describe(bad, e->localNames) + " is missing"
                         : e->guards[failed].describe(e->sources, e->localNames) + " failed";
  }
  if ((int)cache->entries.size() >= options().recompileLimit) {
    bool breaks = std::any_of(cache->entries.begin(), cache->entries.end(),
                              [](const auto &e) { return e->eager; });
    if (!cache->warnedLimit && !breaks) {
      cache->warnedLimit = true;
      PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                       "kiln: %s reached the recompile limit (%d); running it eagerly from "
                       "now on. Last failing guard: %s",
                       codeName(code).c_str(), options().recompileLimit, firstFailure.c_str());
      PyErr_Clear();
    }
    ++gStats["eager_calls"];
    return nullptr;
  }
  if (!cache->entries.empty()) {
    ++gStats["recompiles"];
    log(LogChannel::Recompiles, "recompiling " + codeName(code) + ": " + firstFailure);
  }
  CaptureFailure failure;
  std::unique_ptr<Entry> failedEntry;
  std::unique_ptr<Entry> entry =
      compileEntry(code, func, view, failure, failedEntry, cache->autoDims);
  if (!entry && !tls.fullgraph && failure.rootOffset >= 0) {
    entry = compileBreak(code, func, view, failure);
    // A prefix whose guards fail at once (an assumption that cannot be
    // re-checked) is no use: the frame then runs eagerly as below.
    if (entry &&
        (entry->sources.resolve(view, values) >= 0 || checkGuards(entry->guards, values) >= 0)) {
      failure.reason += "; cannot resume after it: guards do not hold right after capture";
      entry = nullptr;
    }
    if (entry) {
      ++gStats["graph_breaks"];
      log(LogChannel::GraphBreaks, "graph break in " + codeName(code) + ": " +
                                       entry->resume->where +
                                       "; the graph before it is compiled, the rest resumes "
                                       "in a new frame");
    }
  }
  if (!entry) {
    ++gStats["graph_breaks"];
    std::string msg = codeName(code) + " runs eagerly: " + failure.reason +
                      (failure.location.empty() ? "" : " at " + failure.location);
    log(LogChannel::GraphBreaks, msg);
    if (tls.fullgraph) {
      *handled = 1;
      PyErr_Format(PyExc_RuntimeError, "kiln (fullgraph=True): graph break in %s", msg.c_str());
      return nullptr;
    }
    failedEntry->eagerReason = msg;
    // Its guards describe this very frame; if they do not hold now (an
    // assumption that cannot be re-checked), the break is kept unguarded:
    // the code then runs eagerly whenever no earlier entry matches.
    if (failedEntry->sources.resolve(view, values) >= 0 ||
        checkGuards(failedEntry->guards, values) >= 0) {
      failedEntry->sources = SourceTable();
      failedEntry->guards.clear();
    }
    cache->entries.push_back(std::move(failedEntry));
    ++gStats["eager_calls"];
    return nullptr;
  }
  if (entry->sources.resolve(view, values) >= 0 || checkGuards(entry->guards, values) >= 0) {
    ++gStats["graph_breaks"];
    log(LogChannel::GraphBreaks, codeName(code) + ": guards do not hold right after capture");
    ++gStats["eager_calls"];
    return nullptr;
  }
  cache->entries.push_back(std::move(entry));
  *handled = 1;
  return runFrame(*cache->entries.back(), values, func, code, locals);
}
