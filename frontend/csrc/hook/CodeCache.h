//===- CodeCache.h - the per-code-object cache of entries ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Each code object the hook has seen carries a CodeCache in its co_extra
// slot: its compiled entries and failed captures (tried in order on every
// call), whether the code is kiln's own or a graph break's stub, and the
// dims dynamic=None made symbolic. Also the questions the hook asks of a
// code object (its file and name, whether frames of it are skipped).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_CODECACHE_H
#define KILN_FRONTEND_HOOK_CODECACHE_H

#include "Entry.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kiln {

/// The cache of one code object (stored in its co_extra slot, freed with
/// it; FrontendState::caches lists the live ones). Read and changed with
/// the GIL held; a new entry is appended under the compile lock.
struct CodeCache {
  /// Compiled entries and failed captures (Entry::eager), tried in order.
  /// Shared: a call copies the pointer of the entry it checks and runs, so
  /// kiln.reset() or another thread's recompile never frees an entry in use
  /// (the GIL is released while compiled code runs). Walk it by index: it
  /// can change whenever Python runs.
  std::vector<std::shared_ptr<Entry>> entries;
  /// The recompile-limit warning was given.
  bool warnedLimit = false;
  /// The code is kiln's own (-1: not yet known).
  int inKiln = -1;
  /// A graph break's stub (kiln/_resume.py): never captured.
  bool stub = false;
  /// dynamic=None: input dims whose size change caused a recompile
  /// ("<source>#<dim>") and int arguments whose value did ("<source>");
  /// later captures make them symbolic.
  std::set<std::string> autoDynamic;
  /// Number arguments a dynamic capture had to read as constants (`range(n)`,
  /// an op's constant argument): never made dynamic again (compileEntry).
  std::set<std::string> pinnedNumbers;

  /// Drops the entries and what they taught (kiln.reset()); the entries
  /// are moved into `dropped`, for the caller to release when no cache is
  /// being walked any more.
  void clear(std::vector<std::shared_ptr<Entry>> &dropped);
};

/// The cache of `code` (borrowed), made on first use; null (no Python error)
/// when the co_extra slot cannot be read or written.
CodeCache *cacheOf(PyObject *code);

/// Frees a cache (the co_extra slot's free function).
void freeCodeCache(void *cache);

/// The code's file name ("" when unreadable).
std::string codeFile(PyObject *code);

/// The code's qualified name ("?" when unreadable).
std::string codeName(PyObject *code);

/// Whether frames of `code` are never captured (torch, kiln, the standard
/// library, frozen modules).
bool isSkipped(PyObject *code);

/// Whether `code` belongs to kiln's own package (cached in `cache`).
bool isKilnCode(PyObject *code, CodeCache &cache);

/// dynamic=None: when tensor guard `g` of `e` failed because sizes changed
/// (same rank and dtype, old and new sizes >= 2), marks those dims of its
/// source symbolic for the next captures of `code` (Dynamo's automatic
/// dynamic shapes). `values`: the entry's resolved sources.
void markChangedSizes(CodeCache &cache, const Entry &e, const Guard &g,
                      const std::vector<PyRef> &values, PyObject *code);

/// dynamic=None: when value guard `g` of `e` failed because an int (float)
/// argument of the frame (exactly int or float, not bool; a root local)
/// holds another int (float), marks it dynamic for the next captures of
/// `code` (Dynamo's automatic dynamic ints and unspecialized floats;
/// kiln.config.automatic_dynamic_numbers).
void markChangedNumbers(CodeCache &cache, const Entry &e, const Guard &g,
                        const std::vector<PyRef> &values, PyObject *code);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_CODECACHE_H
