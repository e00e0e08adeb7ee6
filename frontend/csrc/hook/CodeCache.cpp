//===- CodeCache.cpp - the per-code-object cache of entries ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CodeCache.h. Ownership: a CodeCache is owned by its code
// object's co_extra slot (freed by freeCodeCache); code objects are borrowed.
//===----------------------------------------------------------------------===//
#include "hook/CodeCache.h"

#include "Log.h"
#include "TensorInfo.h"
#include "hook/FrontendState.h"
#include "hook/Stats.h"

namespace kiln {

void CodeCache::clear(std::vector<std::shared_ptr<Entry>> &dropped) {
  for (std::shared_ptr<Entry> &e : entries)
    dropped.push_back(std::move(e));
  entries.clear();
  warnedLimit = false;
  autoDynamic.clear();
  pinnedNumbers.clear();
}

void freeCodeCache(void *p) {
  auto *c = static_cast<CodeCache *>(p);
  frontend().caches.erase(c);
  delete c;
}

CodeCache *cacheOf(PyObject *code) {
  FrontendState &state = frontend();
  void *extra = nullptr;
  if (_PyCode_GetExtra(code, state.codeExtraIndex, &extra) < 0) {
    PyErr_Clear(); // no cache: the frame runs as if never seen
    return nullptr;
  }
  if (!extra) {
    auto *c = new CodeCache();
    if (_PyCode_SetExtra(code, state.codeExtraIndex, c) < 0) {
      PyErr_Clear(); // no cache: the frame runs as if never seen
      delete c;
      return nullptr;
    }
    state.caches.insert(c);
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
  for (const std::string &p : frontend().skipPrefixes)
    if (file.rfind(p, 0) == 0)
      return true;
  return false;
}

bool isKilnCode(PyObject *code, CodeCache &cache) {
  if (cache.inKiln < 0) {
    const std::string &kiln = frontend().kilnPrefix;
    cache.inKiln = !kiln.empty() && codeFile(code).rfind(kiln, 0) == 0;
  }
  return cache.inKiln;
}

void markChangedSizes(CodeCache &cache, const Entry &e, const Guard &g,
                      const std::vector<PyRef> &values, PyObject *code) {
  if (g.kind != Guard::Kind::Tensor || g.source < 0 || !values[g.source])
    return;
  TensorMeta meta;
  if (!isTensor(values[g.source].get()) || !readTensorMeta(values[g.source].get(), meta)) {
    PyErr_Clear(); // not a readable tensor now: nothing to learn
    return;
  }
  if (meta.sizes.size() != g.sizes.size() || meta.dtype != g.dtype)
    return;
  std::string desc = e.sources.describe(g.source, e.localNames);
  for (size_t d = 0; d < g.sizes.size(); ++d)
    if (g.sizes[d] >= 2 && meta.sizes[d] >= 2 && meta.sizes[d] != g.sizes[d] &&
        cache.autoDynamic.insert(desc + "#" + std::to_string(d)).second)
      log(LogChannel::Dynamic, codeName(code) + ": " + desc + ".size(" + std::to_string(d) +
                                   ") changed from " + std::to_string(g.sizes[d]) + " to " +
                                   std::to_string(meta.sizes[d]) +
                                   "; it is symbolic in the next compilations");
}

void markChangedNumbers(CodeCache &cache, const Entry &e, const Guard &g,
                        const std::vector<PyRef> &values, PyObject *code) {
  if (g.kind != Guard::Kind::Equals || g.source < 0 || !options().automaticDynamicNumbers)
    return;
  PyObject *now = values[g.source].get(), *was = g.expected.get();
  bool ints = now && PyLong_CheckExact(now) && PyLong_CheckExact(was);
  bool floats = now && PyFloat_CheckExact(now) && PyFloat_CheckExact(was);
  if (!ints && !floats)
    return;
  const Source &src = e.sources[g.source];
  if (src.kind != Source::Kind::Local || src.parent != -1)
    return; // globals, attributes, items stay static (as in Dynamo)
  int same = PyObject_RichCompareBool(now, g.expected.get(), Py_EQ);
  if (same != 0) {
    PyErr_Clear();
    return;
  }
  std::string desc = e.sources.describe(g.source, e.localNames);
  if (cache.pinnedNumbers.count(desc) || !cache.autoDynamic.insert(desc).second)
    return;
  ++counters().dynamicNumbers;
  log(LogChannel::Dynamic, codeName(code) + ": " + desc + " changed from " +
                               pyText(g.expected.get()) + " to " + pyText(now) +
                               (ints ? "; it is a symbolic int in the next compilations"
                                     : "; it is a graph input in the next compilations"));
}

} // namespace kiln
