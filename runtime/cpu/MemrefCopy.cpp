//===- MemrefCopy.cpp - strided memref copies at run time ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// kilnMemrefCopy, kiln's implementation of MLIR's `memrefCopy` runtime
// function: a row-major walk over the sizes with each side's strides, rows
// merged where both sides are contiguous.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/MemrefCopy.h"

#include <cstring>
#include <vector>

namespace {

/// Copies `n` elements of `T` from `from` (stride `fs`) to `to` (stride `ts`).
template <typename T>
void copyStrided(char *to, const char *from, int64_t n, int64_t ts, int64_t fs) {
  auto *t = reinterpret_cast<T *>(to);
  auto *f = reinterpret_cast<const T *>(from);
  for (int64_t k = 0; k < n; ++k)
    t[k * ts] = f[k * fs];
}

/// One innermost row: one memcpy when both sides are unit-stride (concat's
/// inserts, row slices), else a typed strided loop (strided taps of
/// convolution and pooling; a memcpy call per element was a third of
/// ResNet-18's batch-8 profile).
void copyRow(char *to, const char *from, int64_t n, int64_t ts, int64_t fs, int64_t elemSize) {
  if (ts == 1 && fs == 1) {
    std::memcpy(to, from, n * elemSize);
    return;
  }
  switch (elemSize) {
  case 1:
    return copyStrided<uint8_t>(to, from, n, ts, fs);
  case 2:
    return copyStrided<uint16_t>(to, from, n, ts, fs);
  case 4:
    return copyStrided<uint32_t>(to, from, n, ts, fs);
  case 8:
    return copyStrided<uint64_t>(to, from, n, ts, fs);
  default:
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(to + k * ts * elemSize, from + k * fs * elemSize, elemSize);
  }
}

} // namespace

extern "C" void kilnMemrefCopy(int64_t elemSize, UnrankedDescriptor *src, UnrankedDescriptor *dst) {
  // Ranked descriptor layout: base, aligned, offset, sizes[rank], strides[rank].
  auto words = [](UnrankedDescriptor *u) { return static_cast<int64_t *>(u->descriptor); };
  auto data = [&](UnrankedDescriptor *u) {
    return reinterpret_cast<char **>(words(u))[1] + words(u)[2] * elemSize;
  };
  int64_t rank = src->rank;
  const int64_t *sizes = words(src) + 3, *sStrides = sizes + rank;
  const int64_t *dStrides = words(dst) + 3 + rank;
  // Dims of size 1 dropped, and a dim merged into the next one when both
  // sides are contiguous across them, so rows are as long as possible.
  std::vector<int64_t> n, ss, ds;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 0)
      return;
    if (sizes[i] == 1)
      continue;
    if (!n.empty() && ss.back() == sStrides[i] * sizes[i] && ds.back() == dStrides[i] * sizes[i]) {
      n.back() *= sizes[i];
      ss.back() = sStrides[i];
      ds.back() = dStrides[i];
      continue;
    }
    n.push_back(sizes[i]);
    ss.push_back(sStrides[i]);
    ds.push_back(dStrides[i]);
  }
  char *to0 = data(dst);
  const char *from0 = data(src);
  if (n.empty())
    return (void)std::memcpy(to0, from0, elemSize);
  int64_t inner = n.back(), sInner = ss.back(), dInner = ds.back();
  int64_t outerRank = static_cast<int64_t>(n.size()) - 1;
  std::vector<int64_t> index(outerRank, 0);
  int64_t so = 0, dO = 0;
  while (true) {
    copyRow(to0 + dO * elemSize, from0 + so * elemSize, inner, dInner, sInner, elemSize);
    int64_t i = outerRank - 1;
    for (; i >= 0; --i) {
      so += ss[i];
      dO += ds[i];
      if (++index[i] < n[i])
        break;
      so -= ss[i] * n[i];
      dO -= ds[i] * n[i];
      index[i] = 0;
    }
    if (i < 0)
      return;
  }
}
