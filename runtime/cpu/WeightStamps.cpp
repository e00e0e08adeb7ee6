//===- WeightStamps.cpp - the calling thread's input stamps ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the stamp table of WeightStamps.h: a borrowed array per thread,
// searched linearly (a shim looks up one weight per call; graphs have a few
// hundred inputs at most).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/WeightStamps.h"

namespace {
thread_local const KilnInputStamp *current = nullptr;
thread_local size_t count = 0;
thread_local bool asked = false;
} // namespace

extern "C" void kilnSetInputStamps(const KilnInputStamp *stamps, size_t n) {
  current = n ? stamps : nullptr;
  count = n;
}

extern "C" const KilnInputStamp *kilnFindInputStamp(const void *data) {
  asked = true;
  for (size_t i = 0; i < count; ++i)
    if (current[i].data == data)
      return &current[i];
  return nullptr;
}

extern "C" bool kilnTakeStampAsked() {
  bool was = asked;
  asked = false;
  return was;
}
