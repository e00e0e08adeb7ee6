//===- CompileLock.cpp - the GIL-aware lock compiles run under ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CompileLock.h. No PyObject references are held. The C++
// mutex is taken only for a few instructions by GIL holders and inside the
// condition wait by threads that released the GIL, so a GIL holder never
// waits for a thread that needs the GIL.
//===----------------------------------------------------------------------===//
#include "hook/CompileLock.h"

#include "hook/FrontendState.h"

#include <Python.h>

#include <chrono>

namespace kiln {

CompileLock::Acquired CompileLock::acquire(std::chrono::milliseconds limit) {
  unsigned long me = PyThread_get_thread_ident();
  if (depth_ > 0 && owner_ == me) {
    ++depth_;
    return Acquired::AtOnce;
  }
  Acquired how = Acquired::AtOnce;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (depth_ > 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      return Acquired::TimedOut;
    how = Acquired::AfterWait;
    Py_BEGIN_ALLOW_THREADS {
      std::unique_lock<std::mutex> lock(mutex_);
      // Timed: a missed wake-up costs at most one period.
      released_.wait_for(lock, std::chrono::milliseconds(50), [this] { return !held_; });
    }
    Py_END_ALLOW_THREADS if (PyErr_CheckSignals() < 0) return Acquired::Interrupted;
  }
  owner_ = me;
  depth_ = 1;
  std::lock_guard<std::mutex> lock(mutex_);
  held_ = true;
  return how;
}

void CompileLock::release() {
  if (--depth_ > 0)
    return;
  owner_ = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = false;
  }
  released_.notify_all();
}

CompileGuard::CompileGuard(std::chrono::milliseconds limit)
    : how_(frontend().compileLock.acquire(limit)),
      held_(how_ == CompileLock::Acquired::AtOnce || how_ == CompileLock::Acquired::AfterWait) {}

void CompileGuard::unlock() {
  if (held_)
    frontend().compileLock.release();
  held_ = false;
}

} // namespace kiln
