//===- PoolProfiler.cpp - kiln's intermediates in torch's memory profile ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements PoolProfiler.h. The two c10 functions are looked up by their
// mangled names in the libc10.so torch already loaded (kiln links no
// torch library): `bool c10::memoryProfilingEnabled()` and
// `void c10::reportMemoryUsageToProfiler(void *ptr, int64_t alloc_size,
// size_t total_allocated, size_t total_reserved, c10::Device device)`,
// where c10::Device is two int8 fields passed by value (type, index).
//===----------------------------------------------------------------------===//
#include "PoolProfiler.h"

#include "runtime/cpu/BufferPool.h"

#include <cstddef>
#include <cstdint>
#include <dlfcn.h>

namespace kiln {
namespace {

struct C10Device {
  int8_t type = 0;   ///< c10::DeviceType::CPU
  int8_t index = -1; ///< no index
};

using EnabledFn = bool (*)();
using ReportFn = void (*)(void *, int64_t, size_t, size_t, C10Device);

EnabledFn gEnabled = nullptr;
ReportFn gReport = nullptr;

void reportBlock(void *ptr, long bytes, long liveBytes) {
  if (gEnabled())
    gReport(ptr, bytes, static_cast<size_t>(liveBytes), static_cast<size_t>(liveBytes),
            C10Device{});
}

} // namespace

bool reportPoolToTorchProfiler() {
  void *c10 = dlopen("libc10.so", RTLD_LAZY | RTLD_NOLOAD);
  if (!c10)
    return false;
  gEnabled = reinterpret_cast<EnabledFn>(dlsym(c10, "_ZN3c1022memoryProfilingEnabledEv"));
  gReport = reinterpret_cast<ReportFn>(
      dlsym(c10, "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"));
  if (!gEnabled || !gReport)
    return false;
  rt::setBufferPoolReporter(&reportBlock);
  return true;
}

bool poolReportsToTorchProfiler() { return gEnabled && gReport; }

} // namespace kiln
