//===- PoolProfiler.h - kiln's intermediates in torch's memory profile -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// torch.profiler's `profile_memory=True` records torch's allocations only;
// kiln's compiled code takes its intermediates from its own buffer pool
// (runtime/cpu/BufferPool.h). This reports each pool block to the profiler
// too (c10::reportMemoryUsageToProfiler, found in the libc10 torch loaded),
// so one timeline holds both and a call's peak is read off it
// (tools/bench_memory.py) instead of adding two separate peaks.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_POOLPROFILER_H
#define KILN_FRONTEND_POOLPROFILER_H

namespace kiln {

/// Installs the reporter when torch's libc10 exports the entry points;
/// returns whether it did.
bool reportPoolToTorchProfiler();

/// Whether pool blocks are reported (reportPoolToTorchProfiler succeeded).
bool poolReportsToTorchProfiler();

} // namespace kiln

#endif // KILN_FRONTEND_POOLPROFILER_H
