//===- BufferPool.cpp - reuse of compiled code's intermediate buffers ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Each block carries a 16-byte header with its requested size in front of
// the pointer handed out (the generated code over-allocates and aligns to 64
// itself). Free blocks are matched by exact size: a compiled graph asks for
// the same sizes on every call.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/BufferPool.h"

#include <atomic>
#include <cstdlib>
#include <utility>
#include <vector>

namespace {

constexpr size_t kHeader = 16;

std::atomic<long> gHits{0}, gMisses{0}, gLive{0}, gPeak{0};
std::atomic<kiln::rt::BufferPoolReporter> gReporter{nullptr};

/// Counts `size` more live bytes, raises the peak and reports the block.
void addLive(void *ptr, size_t size) {
  long live =
      gLive.fetch_add(static_cast<long>(size), std::memory_order_relaxed) + static_cast<long>(size);
  long peak = gPeak.load(std::memory_order_relaxed);
  while (live > peak && !gPeak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  if (auto report = gReporter.load(std::memory_order_relaxed))
    report(ptr, static_cast<long>(size), live);
}

/// One thread's kept blocks (size, raw pointer), oldest first.
struct ThreadPool {
  std::vector<std::pair<size_t, char *>> blocks;
  size_t bytes = 0;
  ~ThreadPool() {
    for (auto &b : blocks)
      std::free(b.second);
  }
  void evictOldest() {
    bytes -= blocks.front().first;
    std::free(blocks.front().second);
    blocks.erase(blocks.begin());
  }
};

thread_local ThreadPool tPool;

char *withHeader(char *raw, size_t size) {
  *reinterpret_cast<size_t *>(raw) = size;
  return raw + kHeader;
}

} // namespace

extern "C" void *kilnPoolMalloc(size_t size) {
  if (size >= kiln::rt::kPoolMinBlock) {
    auto &blocks = tPool.blocks;
    for (size_t i = blocks.size(); i-- > 0;) {
      if (blocks[i].first != size)
        continue;
      char *raw = blocks[i].second;
      tPool.bytes -= size;
      blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
      gHits.fetch_add(1, std::memory_order_relaxed);
      addLive(raw + kHeader, size);
      return withHeader(raw, size);
    }
    gMisses.fetch_add(1, std::memory_order_relaxed);
  }
  auto *raw = static_cast<char *>(std::malloc(size + kHeader));
  if (!raw)
    return nullptr;
  addLive(raw + kHeader, size);
  return withHeader(raw, size);
}

extern "C" void kilnPoolFree(void *ptr) {
  if (!ptr)
    return;
  char *raw = static_cast<char *>(ptr) - kHeader;
  size_t size = *reinterpret_cast<size_t *>(raw);
  long live =
      gLive.fetch_sub(static_cast<long>(size), std::memory_order_relaxed) - static_cast<long>(size);
  if (auto report = gReporter.load(std::memory_order_relaxed))
    report(ptr, -static_cast<long>(size), live);
  if (size < kiln::rt::kPoolMinBlock || size > kiln::rt::kPoolMaxBytes) {
    std::free(raw);
    return;
  }
  while (!tPool.blocks.empty() && (tPool.bytes + size > kiln::rt::kPoolMaxBytes ||
                                   tPool.blocks.size() >= kiln::rt::kPoolMaxBlocks))
    tPool.evictOldest();
  tPool.blocks.emplace_back(size, raw);
  tPool.bytes += size;
}

namespace kiln::rt {

BufferPoolStats bufferPoolStats() {
  BufferPoolStats s;
  s.hits = gHits.load(std::memory_order_relaxed);
  s.misses = gMisses.load(std::memory_order_relaxed);
  s.liveBytes = gLive.load(std::memory_order_relaxed);
  s.peakBytes = gPeak.load(std::memory_order_relaxed);
  return s;
}

void resetBufferPoolPeak() { gPeak.store(gLive.load(std::memory_order_relaxed)); }

void setBufferPoolReporter(BufferPoolReporter reporter) {
  gReporter.store(reporter, std::memory_order_relaxed);
}

} // namespace kiln::rt
