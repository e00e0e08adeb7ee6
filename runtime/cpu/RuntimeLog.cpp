//===- RuntimeLog.cpp - runtime messages for KILN_LOGS ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements RuntimeLog.h: one process-wide sink pointer.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/RuntimeLog.h"

#include <atomic>
#include <cstdio>

namespace {
std::atomic<void (*)(const char *)> sink{nullptr};
} // namespace

extern "C" void kilnSetRuntimeLogSink(void (*fn)(const char *)) { sink.store(fn); }

namespace kiln::rt {

void logFallback(const std::string &message) {
  if (auto fn = sink.load()) {
    fn(message.c_str());
    return;
  }
  std::fprintf(stderr, "[kiln:fallbacks] %s\n", message.c_str());
}

} // namespace kiln::rt
