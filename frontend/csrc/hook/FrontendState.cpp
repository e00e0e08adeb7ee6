//===- FrontendState.cpp - the frontend's process-wide state -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements FrontendState.h and the module-level functions of Hook.h that
// act on it: initHook, stats, resetCaches, setLogSink, graphBreaks.
// Ownership: the state holds a strong reference to the log sink; modules
// imported in initHook are released before it returns.
//===----------------------------------------------------------------------===//
#include "hook/FrontendState.h"

#include "PyRef.h"
#include "TensorInfo.h"
#include "hook/CodeCache.h"
#include "hook/Hook.h"
#include "registration/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <filesystem>

extern "C" void kiln_install_hook(int on);

namespace kiln {

FrontendState::FrontendState() = default;
FrontendState::~FrontendState() = default;

void FrontendState::reset() {
  // Entries are moved out first and released after the walk: releasing one
  // can run Python (its references), which may free code objects and so
  // remove their caches from `caches`, or let another thread run.
  std::vector<std::shared_ptr<Entry>> dropped;
  for (CodeCache *c : caches)
    c->clear(dropped);
  counters.reset();
  breaks.clear();
}

FrontendState &frontend() {
  static FrontendState *state = new FrontendState(); // never destroyed (see the header)
  return *state;
}

Counters &counters() { return frontend().counters; }

namespace {

/// A context with every kiln dialect loaded (captures build into it).
/// Fills the folders whose frames are never captured; false with a Python
/// error set.
bool findSkippedPackages(FrontendState &state) {
  for (const char *mod : {"torch", "kiln", "os"}) {
    PyRef m = PyRef::steal(PyImport_ImportModule(mod));
    PyRef file = m ? PyRef::steal(PyObject_GetAttrString(m.get(), "__file__")) : PyRef();
    const char *path = file ? PyUnicode_AsUTF8(file.get()) : nullptr;
    if (!path)
      return false;
    state.skipPrefixes.push_back(std::filesystem::path(path).parent_path().string() + "/");
    if (std::string(mod) == "kiln")
      state.kilnPrefix = state.skipPrefixes.back();
  }
  return true;
}

} // namespace

bool initHook() {
  FrontendState &state = frontend();
  if (state.context)
    return true;
  if (!initTorchHandles())
    return false;
  state.codeExtraIndex = _PyEval_RequestCodeExtraIndex(freeCodeCache);
  if (state.codeExtraIndex < 0) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: no free code-extra slot");
    return false;
  }
  if (!findSkippedPackages(state))
    return false;
  mlir::kiln::registerAllPasses();
  state.context = makeContext();
  kiln_install_hook(1);
  return true;
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  auto context =
      std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

void FrontendState::renewContext() {
  if (++compilesInContext <= kCompilesPerContext)
    return;
  context = makeContext();
  compilesInContext = 1;
}

std::map<std::string, long> stats() { return frontend().counters.byName(); }

void resetCaches() { frontend().reset(); }

void setLogSink(PyObject *sink) {
  Py_XINCREF(sink);
  Py_XSETREF(frontend().logSink, sink);
}

std::vector<BreakRecord> graphBreaks() {
  const std::deque<BreakRecord> &breaks = frontend().breaks;
  return {breaks.begin(), breaks.end()};
}

} // namespace kiln
