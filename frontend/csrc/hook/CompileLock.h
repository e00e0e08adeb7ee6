//===- CompileLock.h - the GIL-aware lock compiles run under ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Compiling a frame (capture, passes, LLVM, publishing the entry) runs
// under one process-wide lock: the captures share one MLIR context, and a
// thread that misses a code's cache while another compiles it must find the
// new entry afterwards instead of compiling a second one. The holder calls
// Python (the capture) and releases the GIL around LLVM, so the lock must
// never be waited for with the GIL held: a waiter releases the GIL until
// the holder lets go (then re-checks the code's cache), and its own state is
// read and written by GIL holders only. Reentrant for the holding thread (a
// compiled function called while capturing). Calls of compiled code never
// take it. See docs/architecture.md, "Threads".
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_COMPILELOCK_H
#define KILN_FRONTEND_HOOK_COMPILELOCK_H

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace kiln {

/// The process's compile lock (FrontendState::compileLock; see the header).
class CompileLock {
public:
  /// What acquire() did.
  enum class Acquired {
    AtOnce,      ///< nobody held it (or this thread already did)
    AfterWait,   ///< another thread held it: the caller re-checks its cache
    Interrupted, ///< a signal handler raised while waiting: not taken, Python error set
    TimedOut     ///< another thread held it for longer than the limit: not taken
  };

  /// Takes the lock for this thread; called with the GIL held, which is
  /// released while waiting for another holder, for at most `limit`: the
  /// holder runs user code while capturing (a property, a capture-time
  /// call), which may wait for a lock this thread holds, so an unbounded
  /// wait could deadlock; the caller runs its frame eagerly instead.
  Acquired acquire(std::chrono::milliseconds limit);
  /// Lets go of one acquire() of this thread; called with the GIL held.
  void release();
  /// Whether the holder took it once (no compile of this thread is in
  /// flight under it). Called by the holder.
  bool outermost() const { return depth_ == 1; }

private:
  // Read and written with the GIL held.
  unsigned long owner_ = 0; ///< PyThread_get_thread_ident of the holder
  int depth_ = 0;           ///< acquire() calls of the holder not yet released
  // What waiters without the GIL sleep on: `held_` mirrors depth_ > 0.
  std::mutex mutex_;
  std::condition_variable released_;
  bool held_ = false;
};

/// RAII: holds the process's compile lock from construction until unlock()
/// or destruction (nothing when acquiring was interrupted).
class CompileGuard {
public:
  explicit CompileGuard(std::chrono::milliseconds limit);
  ~CompileGuard() { unlock(); }
  CompileGuard(const CompileGuard &) = delete;
  CompileGuard &operator=(const CompileGuard &) = delete;

  /// How the lock was taken.
  CompileLock::Acquired how() const { return how_; }
  /// Whether this thread holds it now.
  bool held() const { return held_; }
  /// Releases the lock early (before running the new entry: user code
  /// never runs under it).
  void unlock();

private:
  CompileLock::Acquired how_;
  bool held_;
};

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_COMPILELOCK_H
