//===- FrameHook.cpp - the kiln_on_frame callback ----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln_on_frame`, `kiln_hook_active` and `kiln_hook_pause` of
// EvalFrameHook.c (module and class bodies run paused: nothing an import
// runs is captured) and
// callCompiled/callEager of Hook.h. Hot path (cache hit): resolve sources,
// check guards, run the entry. A miss captures and compiles a new entry
// (CompileDriver.h) or reports a graph break (BreakLog.h) and runs the
// frame eagerly. Ownership: frame locals/globals are borrowed for the
// duration of the call; resolved source values are held in a per-thread
// buffer of PyRefs released before returning; entries (shared by their
// CodeCache and the calls running them) hold strong references to guarded
// objects. Threads: see docs/architecture.md ("Threads") — hits take no
// lock; a miss compiles under the GIL-aware compile lock (CompileLock.h)
// and re-checks the cache when another thread compiled meanwhile.
//===----------------------------------------------------------------------===//
#include "hook/Hook.h"
#include "Export.h"

#include "Log.h"
#include "TensorInfo.h"
#include "capture/breaks/Resume.h"
#include "hook/CodeCache.h"
#include "hook/CompileDriver.h"
#include "hook/CompileLock.h"
#include "hook/FrontendState.h"
#include "hook/Recompute.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

namespace kiln {
namespace {

/// Per-thread hook state.
struct ThreadState {
  int active = 0;                    ///< >0 inside callCompiled
  int busy = 0;                      ///< >0 while kiln's own code runs Python
  PyObject *entryCode = nullptr;     ///< the code of callCompiled's function (borrowed)
  bool fullgraph = false;            ///< a graph break is an error
  PyObject *autogradApply = nullptr; ///< kiln._autograd.apply (borrowed)
  DynamicPolicy::Mode dynamic = DynamicPolicy::Mode::Auto; ///< callCompiled's `dynamic`
};
thread_local ThreadState tls;

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

/// One intercepted frame: what kiln_on_frame was given, its code's cache
/// and the buffer its entries' sources are resolved into.
struct FrameCall {
  PyObject *code;    ///< borrowed
  PyObject *func;    ///< borrowed
  PyObject **locals; ///< borrowed (the frame's fast locals)
  FrameView view;
  CodeCache &cache;
  std::vector<PyRef> &values;
  int *handled; ///< set to 1 when the result (or error) replaces the frame's evaluation
};

/// Why a cached entry does not match a call.
enum class Miss {
  None,          ///< it matches
  MissingSource, ///< a source cannot be read (index: the source)
  GradMode,      ///< grad mode differs from the capture's
  DefaultDtype,  ///< torch's default dtype differs from the capture's
  Guard,         ///< a guard fails (index: the guard)
  SizeRelation,  ///< a relation of symbolic sizes fails (index: see checkSymbols)
  InputAlias,    ///< an input written back into aliases input `index`
};

/// The result of checking one entry against a call.
struct EntryCheck {
  Miss miss = Miss::None;
  int index = -1; ///< the failing source, guard or symbol
};

/// Checks `e` against the call (its sources are resolved into call.values).
EntryCheck checkEntry(const Entry &e, FrameCall &call, bool grad, PyObject *defDtype) {
  if (int bad = e.sources.resolve(call.view, call.values); bad >= 0)
    return {Miss::MissingSource, bad};
  if (e.gradMode != grad)
    return {Miss::GradMode};
  if (e.defaultDtype != defDtype)
    return {Miss::DefaultDtype};
  if (int bad = checkGuards(e.guards, call.values); bad >= 0)
    return {Miss::Guard, bad};
  if (!e.symbols.empty()) {
    llvm::SmallVector<PyObject *, 8> ins;
    std::vector<PyRef> none;
    gatherInputs(e, call.values, /*perCall=*/false, ins, none);
    if (int bad = checkSymbols(e, ins); bad >= 0)
      return {Miss::SizeRelation, bad};
  }
  if (!e.effects.empty())
    if (int bad = checkWriteBackAliasing(e, call.values); bad >= 0)
      return {Miss::InputAlias, bad};
  return {};
}

/// Words for a recompile log: why `e` did not match.
std::string describeMiss(const Entry &e, const EntryCheck &check) {
  switch (check.miss) {
  case Miss::MissingSource:
    return e.sources.describe(check.index, e.localNames) + " is missing";
  case Miss::GradMode:
    return "grad mode changed";
  case Miss::DefaultDtype:
    return "torch's default dtype changed";
  case Miss::Guard:
    return e.guards[check.index].describe(e.sources, e.localNames) + " failed";
  case Miss::SizeRelation:
    return "size relation " + describeSymbol(e, check.index) + " failed";
  case Miss::InputAlias:
    return "an input updated in place shares storage with " +
           e.sources.describe(e.inputs[check.index].source, e.localNames);
  case Miss::None:
    break;
  }
  return "";
}

/// Whether a new entry's sources resolve and its guards hold for this call;
/// if not, `why` (when given) says which source or guard failed.
bool holdsNow(const Entry &e, FrameCall &call, std::string *why = nullptr) {
  EntryCheck check;
  check.index = e.sources.resolve(call.view, call.values);
  check.miss = Miss::MissingSource;
  if (check.index < 0) {
    check.index = checkGuards(e.guards, call.values);
    check.miss = Miss::Guard;
  }
  if (check.index < 0)
    return true;
  if (why)
    *why = describeMiss(e, check);
  return false;
}

/// Runs a hit entry. New reference or null with a Python error.
/// The graph raised (an index out of range ...): nothing of the call has
/// happened yet (side effects and input updates are applied after the
/// graph), so a frame with side effects runs eagerly instead, unless the
/// graph wrote into an input's memory: eager makes the side effects before
/// the error and raises its own exception (they were lost: a log append
/// before the failing op, `x.add_(1)` before it). A graph without side
/// effects keeps its error (eager's type and message). Null: the error
/// stays set, or the frame runs eagerly (`handled` cleared).
PyObject *rerunEagerlyAfterError(const Entry &entry, FrameCall &call) {
  bool wroteInputs = std::any_of(entry.inPlaceOf.begin(), entry.inPlaceOf.end(),
                                 [](int input) { return input >= 0; });
  if (entry.effects.empty() || wroteInputs || !PyErr_ExceptionMatches(PyExc_Exception) ||
      PyErr_ExceptionMatches(PyExc_MemoryError))
    return nullptr;
  PyErr_Clear();
  *call.handled = 0;
  ++counters().eagerCalls;
  log(LogChannel::GraphBreaks, codeName(call.code) +
                                   " runs eagerly: its graph raised; eager makes the side effects "
                                   "before the error and raises its own exception");
  return nullptr;
}

PyObject *runEntry(const std::shared_ptr<Entry> &shared, FrameCall &call) {
  Entry &entry = *shared;
  llvm::SmallVector<PyObject *, 16> inputs;
  std::vector<PyRef> made; // a seed or int carriers for this call (owned here)
  if (!gatherInputs(entry, call.values, /*perCall=*/true, inputs, made))
    return nullptr;
  ++counters().compiledCalls;
  if (entry.needsAutograd)
    return runWithAutograd(shared, inputs, call.func, call.code, call.locals, tls.autogradApply,
                           call.values);
  std::vector<PyRef> results;
  if (!runGraph(entry, inputs, results))
    return rerunEagerlyAfterError(entry, call);
  if (exportRecording())
    recordExportRun(entry, inputs, results);
  PyObject *r = assembleResult(entry, results, inputs, call.values);
  if (r && !entry.effects.empty() && !replaySideEffects(entry, results, inputs, call.values)) {
    Py_DECREF(r);
    return nullptr;
  }
  return r;
}

/// Runs a hit entry and, for a graph break's prefix, the rest of the frame.
/// `entry` is this call's own reference: it stays alive until the call
/// returns, whatever other threads do to the cache.
PyObject *runFrame(const std::shared_ptr<Entry> &entry, FrameCall &call) {
  *call.handled = 1;
  PyObject *r = runEntry(entry, call);
  if (!r || !entry->resume)
    return r;
  PyRef state = PyRef::steal(r);
  Unbusy user;
  return runBreak(*entry->resume, state.get(), call.values, call.func);
}

/// Raises kiln's fullgraph=True error for a graph break; null.
PyObject *fullgraphError(FrameCall &call, const std::string &what) {
  *call.handled = 1;
  PyErr_Format(PyExc_RuntimeError, "kiln (fullgraph=True): graph break in %s", what.c_str());
  return nullptr;
}

/// Runs the matching entry `e` (an eager one lets the frame run normally).
PyObject *runMatch(const std::shared_ptr<Entry> &e, FrameCall &call) {
  if (e->eager) {
    ++counters().eagerCalls;
    return tls.fullgraph && !e->raisesInEager ? fullgraphError(call, e->eagerReason) : nullptr;
  }
  if (e->resume && tls.fullgraph)
    return fullgraphError(call, codeName(call.code) + ": " + e->resume->where);
  ++counters().cacheHits;
  return runFrame(e, call);
}

/// A frame of a code at its recompile limit runs eagerly (warned once,
/// unless its captures break anyway).
void warnRecompileLimit(FrameCall &call, const std::string &lastMiss) {
  CodeCache &cache = call.cache;
  bool breaks = std::any_of(cache.entries.begin(), cache.entries.end(),
                            [](const auto &e) { return e->eager; });
  if (cache.warnedLimit || breaks)
    return;
  cache.warnedLimit = true;
  if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                       "kiln: %s reached the recompile limit (%d); running it eagerly from "
                       "now on. Last failing guard: %s",
                       codeName(call.code).c_str(), options().recompileLimit, lastMiss.c_str()) < 0)
    PyErr_Clear(); // warnings turned into errors: the frame still runs eagerly
}

/// After a failed capture: reports the break and caches an eager entry for
/// the frame (`failed`: guarded by what the capture assumed), which then
/// runs normally; under fullgraph=True raises instead, unless the capture
/// stopped at the user's own exception (a user-error break: a raise, a
/// failing assert, an IndexError/KeyError/ZeroDivisionError on constants):
/// CPython then runs the frame and raises that exception itself, with its
/// type, message, __cause__/__context__ and the user's line in the
/// traceback, as eager does. (If the user's code catches it, the frame
/// simply runs eagerly: the break is still reported and counted.)
PyObject *runEagerAfterFailure(FrameCall &call, const CaptureFailure &failure,
                               std::unique_ptr<Entry> failed) {
  BreakRecord record = breakFromFailure(codeName(call.code), failure, /*resumed=*/false);
  std::string summary = breakSummary(record);
  reportBreak(std::move(record));
  bool raises = failure.category == BreakCategory::UserError;
  if (tls.fullgraph && !raises)
    return fullgraphError(call, summary);
  failed->eagerReason = summary;
  failed->raisesInEager = raises;
  // Its guards describe this very frame; if they do not hold now (an
  // assumption that cannot be re-checked), the break is kept unguarded:
  // the code then runs eagerly whenever no earlier entry matches.
  if (!holdsNow(*failed, call)) {
    failed->sources = SourceTable();
    failed->guards.clear();
  }
  call.cache.entries.push_back(std::move(failed));
  ++counters().eagerCalls;
  return nullptr;
}

/// A break that cannot resume after a capture that read Python numbers from
/// tensors (a Scalar used inside an inlined call, say): captured again with
/// those reads as breaks, which may resume where the later use could not
/// (as before Scalars existed). On success `failure`/`failed` describe the
/// new break; null (both untouched) otherwise.
std::unique_ptr<Entry> retryWithScalarBreaks(FrameCall &call, CaptureFailure &failure,
                                             std::unique_ptr<Entry> &failed) {
  CaptureFailure again;
  std::unique_ptr<Entry> failedAgain;
  std::unique_ptr<Entry> entry =
      compileEntry(call.code, call.func, call.view, tls.dynamic, call.cache, again, failedAgain,
                   /*scalarsAsBreaks=*/true, call.cache.entries.size());
  if (entry) // whole this time (not expected): keep the first outcome's account
    return nullptr;
  if (again.rootOffset >= 0)
    entry =
        compileBreak(call.code, call.func, call.view, again, tls.dynamic, call.cache.autoDynamic,
                     /*scalarsAsBreaks=*/true, call.cache.entries.size());
  if (!entry || !holdsNow(*entry, call))
    return nullptr;
  failure = again;
  failed = std::move(failedAgain);
  return entry;
}

/// Captures and compiles the frame (or its prefix up to a graph break) and
/// runs it; on failure the frame runs eagerly. `lock` is held on entry and
/// released before the new entry runs (user code never runs under it).
PyObject *compileAndRun(FrameCall &call, CompileGuard &lock) {
  CaptureFailure failure;
  std::unique_ptr<Entry> failed;
  std::unique_ptr<Entry> entry =
      compileEntry(call.code, call.func, call.view, tls.dynamic, call.cache, failure, failed,
                   /*scalarsAsBreaks=*/false, call.cache.entries.size());
  if (!entry && !tls.fullgraph && failure.rootOffset >= 0) {
    entry =
        compileBreak(call.code, call.func, call.view, failure, tls.dynamic, call.cache.autoDynamic,
                     /*scalarsAsBreaks=*/false, call.cache.entries.size());
    // A prefix whose guards fail at once (an assumption that cannot be
    // re-checked) is no use: the frame then runs eagerly as below.
    std::string why;
    if (entry && !holdsNow(*entry, call, &why)) {
      failure.reason +=
          "; cannot resume after it: guards do not hold right after capture (" + why + ")";
      entry = nullptr;
    }
    if (!entry && failure.madeScalars)
      entry = retryWithScalarBreaks(call, failure, failed);
    if (entry)
      reportBreak(breakFromFailure(codeName(call.code), failure, /*resumed=*/true));
  }
  if (!entry)
    return runEagerAfterFailure(call, failure, std::move(failed));
  std::string why;
  if (!holdsNow(*entry, call, &why)) {
    CaptureFailure stale;
    stale.reason = "guards do not hold right after capture (" + why + ")";
    reportBreak(breakFromFailure(codeName(call.code), stale, /*resumed=*/false));
    ++counters().eagerCalls;
    return nullptr;
  }
  std::shared_ptr<Entry> published = std::move(entry);
  call.cache.entries.push_back(published);
  lock.unlock();
  return runFrame(published, call);
}

/// The first cached entry that matches the call, or null; `firstMiss` says
/// why the first entry did not. Walked by index with a reference to each
/// entry checked: guards can run Python, and other threads may then reset
/// or extend the cache.
std::shared_ptr<Entry> findEntry(FrameCall &call, std::string &firstMiss) {
  bool grad = gradEnabled(); // this thread's grad mode (torch keeps it per thread)
  PyObject *defDtype = defaultDtype();
  for (size_t i = 0; i < call.cache.entries.size(); ++i) {
    std::shared_ptr<Entry> e = call.cache.entries[i];
    EntryCheck check = checkEntry(*e, call, grad, defDtype);
    if (check.miss == Miss::None)
      return e;
    // A size change makes every changed dim of the entry's tensors
    // symbolic, not only the first guard's: a KV cache's keys and values
    // grow together, and one left static would equal the other's symbol.
    if (check.miss == Miss::Guard && tls.dynamic == DynamicPolicy::Mode::Auto && !e->eager)
      for (const Guard &g : e->guards) {
        markChangedSizes(call.cache, *e, g, call.values, call.code);
        markChangedNumbers(call.cache, *e, g, call.values, call.code);
      }
    if (firstMiss.empty())
      firstMiss = describeMiss(*e, check);
  }
  return nullptr;
}

/// Drops the entries for objects that died (weakly held modules): they can
/// never match again, and their compiled code is freed once no running call
/// holds it.
void dropDeadEntries(CodeCache &cache) {
  auto &entries = cache.entries;
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const std::shared_ptr<Entry> &e) {
                                 return e->sources.hasDeadReference() ||
                                        hasDeadReference(e->guards);
                               }),
                entries.end());
}

/// Whether the code has as many live entries as the recompile limit allows; the
/// frame then runs eagerly (warned once).
bool atRecompileLimit(FrameCall &call, const std::string &firstMiss) {
  dropDeadEntries(call.cache);
  if ((int)call.cache.entries.size() < options().recompileLimit)
    return false;
  warnRecompileLimit(call, firstMiss);
  ++counters().eagerCalls;
  return true;
}

/// How long a frame waits for another thread's compile before it runs
/// eagerly (CompileLock::acquire: a capture runs user code, which may wait
/// for a lock the waiting thread holds).
constexpr std::chrono::milliseconds kCompileWaitLimit{10000};

/// The frame of a code the hook handles: runs the first matching entry, or
/// compiles a new one (up to the recompile limit) under the compile lock.
PyObject *handleFrame(FrameCall &call) {
  std::string firstMiss;
  if (std::shared_ptr<Entry> e = findEntry(call, firstMiss))
    return runMatch(e, call);
  bool recompile = !call.cache.entries.empty(); // a miss of an entry, even one dropped now
  // A code at its limit runs eagerly without waiting for other compiles.
  if (atRecompileLimit(call, firstMiss))
    return nullptr;
  CompileGuard lock(kCompileWaitLimit);
  if (lock.how() == CompileLock::Acquired::Interrupted) {
    *call.handled = 1; // KeyboardInterrupt while waiting for another compile
    return nullptr;
  }
  if (lock.how() == CompileLock::Acquired::TimedOut) {
    ++counters().eagerCalls;
    log(LogChannel::Recompiles,
        codeName(call.code) + " runs eagerly: another thread's compile held the compile lock "
                              "for 10 s (its capture may be waiting for a lock of this thread)");
    return nullptr;
  }
  if (lock.how() == CompileLock::Acquired::AfterWait) {
    // Another thread compiled meanwhile: its entry may fit this call.
    firstMiss.clear();
    if (std::shared_ptr<Entry> e = findEntry(call, firstMiss)) {
      lock.unlock();
      return runMatch(e, call);
    }
    if (atRecompileLimit(call, firstMiss))
      return nullptr;
  }
  if (recompile) {
    ++counters().recompiles;
    log(LogChannel::Recompiles, "recompiling " + codeName(call.code) + ": " + firstMiss);
  }
  if (frontend().compileLock.outermost())
    frontend().renewContext();
  return compileAndRun(call, lock);
}

/// callCompiled's `dynamic` (0, 1, 2) as a policy mode.
DynamicPolicy::Mode dynamicMode(int dynamic) {
  return dynamic == 1   ? DynamicPolicy::Mode::All
         : dynamic == 2 ? DynamicPolicy::Mode::Auto
                        : DynamicPolicy::Mode::Static;
}

} // namespace

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
  tls.dynamic = dynamicMode(dynamic);
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

extern "C" void kiln_hook_pause(int delta) { tls.busy += delta; }

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
  if ((isEntry && isKilnCode(code, *cache)) || cache->stub)
    return nullptr;
  Busy busy;
  ++counters().frames;
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
  FrameCall call{code,   func,   locals, {locals, numLocals, globals, builtins, func},
                 *cache, values, handled};
  return handleFrame(call);
}
