//===- CallHooks.cpp - what compiled code asks the frontend during a call -----===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CallHooks.h: one set of hooks per thread.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CallHooks.h"

#include <cstdio>
#include <cstdlib>

namespace {
thread_local kiln::rt::CallHooks current;
} // namespace

extern "C" void *kilnOutputData(int64_t index, int64_t bytes) {
  if (!current.allocateOutput) {
    std::fprintf(stderr,
                 "kiln: compiled code asked for output %lld (%lld bytes) with no output "
                 "allocator installed on this thread\n",
                 static_cast<long long>(index), static_cast<long long>(bytes));
    std::abort();
  }
  return current.allocateOutput(current.context, index, bytes);
}

extern "C" void kilnReleaseInput(int64_t index) {
  if (current.releaseInput)
    current.releaseInput(current.context, index);
}

namespace kiln::rt {

CallHooksScope::CallHooksScope(const CallHooks &hooks) : prev_(current) { current = hooks; }

CallHooksScope::~CallHooksScope() { current = prev_; }

std::vector<std::pair<const char *, void *>> callHookSymbols() {
  return {{"kilnOutputData", reinterpret_cast<void *>(&kilnOutputData)},
          {"kilnReleaseInput", reinterpret_cast<void *>(&kilnReleaseInput)}};
}

} // namespace kiln::rt
