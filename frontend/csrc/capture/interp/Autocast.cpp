//===- Autocast.cpp - CPU autocast state of a capture ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The side table behind Autocast.h: per Interpreter, the caller's state,
// the current region's, the depth of mapped ops being built, the
// torch.autocast objects built at capture and the `__exit__` of each
// entered region with the state it restores. All under the GIL.
//===----------------------------------------------------------------------===//
#include "capture/interp/Autocast.h"

#include <map>

namespace kiln {
namespace {

struct Table {
  AutocastState entry, current;
  int depth = 0;
  std::map<PyObject *, std::pair<PyRef, AutocastState>> contexts;
  std::map<PyObject *, std::pair<PyRef, AutocastState>> exits; ///< -> the state to restore
};

Table &table(const Interpreter &I) {
  // Leaked (process lifetime, under the GIL): its PyRefs must not be
  // released after Python's finalization.
  static auto *tables = new std::map<const Interpreter *, Table>();
  return (*tables)[&I];
}

} // namespace

void autocastReset(const Interpreter &I, AutocastState entry) {
  Table &t = table(I);
  t = Table();
  t.entry = t.current = entry;
}

AutocastState autocastEntry(const Interpreter &I) { return table(I).entry; }

AutocastState autocastCurrent(const Interpreter &I) { return table(I).current; }

std::optional<DType> autocastForOp(const Interpreter &I) {
  const Table &t = table(I);
  if (!t.current.enabled || t.depth > 0)
    return std::nullopt;
  return t.current.dtype;
}

void autocastOpDepth(const Interpreter &I, int delta) { table(I).depth += delta; }

void autocastRegister(const Interpreter &I, PyRef ctx, AutocastState state) {
  PyObject *key = ctx.get();
  table(I).contexts[key] = {std::move(ctx), state};
}

PyObject *autocastEnter(const Interpreter &I, PyObject *ctx) {
  Table &t = table(I);
  auto it = t.contexts.find(ctx);
  if (it == t.contexts.end())
    return nullptr;
  PyRef exitFn = PyRef::steal(PyObject_GetAttrString(ctx, "__exit__"));
  if (!exitFn)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("torch.autocast object without __exit__"));
  PyObject *key = exitFn.get();
  t.exits[key] = {exitFn, t.current};
  t.current = it->second.second;
  return key;
}

bool autocastExit(const Interpreter &I, PyObject *fn) {
  Table &t = table(I);
  auto it = t.exits.find(fn);
  if (it == t.exits.end())
    return false;
  t.current = it->second.second;
  return true; // the entry stays: its PyRef keeps `fn` alive for the capture
}

} // namespace kiln
