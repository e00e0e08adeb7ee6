//===- BufferPool.h - reuse of compiled code's intermediate buffers -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `malloc`/`free` that JIT'd CPU code calls for its intermediate
// buffers (memref.alloc / dealloc). Large blocks (>= 64 KiB) are kept in a
// per-thread list when freed and handed out again for a request of the same
// size, so a graph called repeatedly with the same shapes stops paying for
// fresh pages (glibc mmaps such blocks and unmaps them on free: a page
// fault, page clearing and cgroup accounting per 4 KiB page, every call).
// At most 64 blocks and 256 MiB are kept per thread, oldest evicted first;
// they are released when the thread exits. Small blocks go straight to
// malloc/free. Only pointers from kilnPoolMalloc may be passed to
// kilnPoolFree.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_BUFFERPOOL_H
#define KILN_RUNTIME_CPU_BUFFERPOOL_H

#include <cstddef>

extern "C" {
/// malloc for compiled code: 16-byte aligned, or null when out of memory.
void *kilnPoolMalloc(size_t size);
/// free for compiled code (null is a no-op).
void kilnPoolFree(void *ptr);
}

namespace kiln::rt {

/// Counters of the pool since the process started (all threads).
struct BufferPoolStats {
  /// Large requests served from a kept block.
  long hits = 0;
  /// Large requests that had to call malloc.
  long misses = 0;
  /// Bytes handed out and not yet freed (every size, all threads): the
  /// compiled code's live intermediates.
  long liveBytes = 0;
  /// The most `liveBytes` has been since the process started or the last
  /// resetBufferPoolPeak().
  long peakBytes = 0;
};

/// The current counters.
BufferPoolStats bufferPoolStats();

/// Restarts the peak at the current live bytes (to measure one call).
void resetBufferPoolPeak();

/// Called with each block handed out (bytes > 0) or taken back (bytes < 0)
/// and the live bytes after it, on the thread doing so: the frontend passes
/// them to torch's profiler, so a memory profile shows kiln's intermediates
/// on the same timeline as torch's tensors (tools/bench_memory.py).
using BufferPoolReporter = void (*)(void *ptr, long bytes, long liveBytes);
/// Sets (or, with null, clears) the reporter for every thread.
void setBufferPoolReporter(BufferPoolReporter reporter);

/// Blocks of at least this size are kept for reuse.
constexpr size_t kPoolMinBlock = size_t(64) << 10;
/// Per-thread limits of what is kept.
constexpr size_t kPoolMaxBytes = size_t(256) << 20;
constexpr size_t kPoolMaxBlocks = 64;

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_BUFFERPOOL_H
