//===- FrontendState.h - the frontend's process-wide state --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Everything the frame hook keeps between calls, in one object: the MLIR
// context captures build into, the co_extra slot of the per-code caches and
// the live caches, which files are never captured, the counters, the graph
// breaks reported since the last reset, and kiln.explain's log sink.
// Owner: the kiln._C module creates it in its init (initHook, Hook.h) and
// never destroys it: code objects free their caches through it until the
// interpreter shuts down. Per-thread hook state (is the hook active on this
// thread) stays in FrameHook.cpp.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_FRONTENDSTATE_H
#define KILN_FRONTEND_HOOK_FRONTENDSTATE_H

#include "hook/BreakLog.h"
#include "hook/CompileLock.h"
#include "hook/Stats.h"

#include <Python.h>

#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace kiln {

struct CodeCache;

/// The frontend's state between calls (one per process, see the header).
/// Touched only with the GIL held; the MLIR context only under
/// `compileLock` (the LLVM part of a compile runs without the GIL).
struct FrontendState {
  FrontendState();
  ~FrontendState();

  /// The context every capture builds its module in (single-threaded:
  /// used only by the holder of `compileLock`).
  std::unique_ptr<mlir::MLIRContext> context;
  /// Held from capture until a new entry is published (CompileLock.h).
  CompileLock compileLock;
  /// Top-level compiles since `context` was made (see renewContext).
  int compilesInContext = 0;
  static constexpr int kCompilesPerContext = 64;
  /// The co_extra slot holding each code object's CodeCache (-1: none yet).
  Py_ssize_t codeExtraIndex = -1;
  /// The live caches (a cache removes itself when its code object dies).
  std::set<CodeCache *> caches;
  /// Frames of files under these folders are never captured (torch, kiln,
  /// the standard library).
  std::vector<std::string> skipPrefixes;
  /// kiln's own package folder: never captured, even as the entry frame.
  std::string kilnPrefix;
  /// What kiln.stats() reports.
  Counters counters;
  /// Numbers the IR dump folders of successive compilations.
  long compileCounter = 0;
  /// The graph breaks reported since the last reset, oldest first (at most
  /// kMaxBreakRecords: older ones are dropped).
  std::deque<BreakRecord> breaks;
  static constexpr size_t kMaxBreakRecords = 1024;
  /// kiln.explain's collector of log messages, or null for stderr. A strong
  /// reference, released when replaced (setLogSink); a raw pointer because
  /// this state is never destroyed.
  PyObject *logSink = nullptr;

  /// Called by the compile lock's holder before a top-level compile (no
  /// capture in flight): replaces the MLIR context by a fresh one every
  /// kCompilesPerContext compiles. A context keeps every attribute it ever
  /// made, and some are distinct per compile (LLVM alias scopes), so one
  /// context for the process would grow with every compile; entries hold
  /// no MLIR objects, so nothing outlives its context.
  void renewContext();

  /// Drops every compiled entry, zeroes the counters, forgets the breaks.
  /// Calls running an entry keep it alive (entries are shared) until they
  /// return; compiles in flight publish their entry afterwards.
  void reset();
};

/// The process's frontend state (created on first use; see the header).
FrontendState &frontend();

/// A new single-threaded MLIR context with every kiln dialect loaded (the
/// kind FrontendState::context is).
std::unique_ptr<mlir::MLIRContext> makeContext();

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_FRONTENDSTATE_H
