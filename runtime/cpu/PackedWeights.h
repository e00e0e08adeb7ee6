//===- PackedWeights.h - caches of weights packed per tensor -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What the packed-weight caches of the oneDNN shims (DnnlConv.cpp,
// PackedGemm.cpp) share: keyed by the stamp serial of the weight's tensor
// (WeightStamps.h) and the call's shape, each entry counting its bytes.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_PACKEDWEIGHTS_H
#define KILN_RUNTIME_CPU_PACKEDWEIGHTS_H

#include <atomic>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace kiln::rt {

/// (tensor serial, shape key) -> packed entry.
template <typename Packed>
using PackedCache = std::map<std::pair<uint64_t, std::vector<int64_t>>, Packed>;

/// Erases every entry of the tensor of `serial` (it died), taking their
/// `bytes` off `held`.
template <typename Packed>
void forgetPacked(PackedCache<Packed> &cache, std::atomic<int64_t> &held, uint64_t serial) {
  auto first = cache.lower_bound({serial, {}});
  auto last = cache.lower_bound({serial + 1, {}});
  for (auto it = first; it != last; ++it)
    held.fetch_sub(int64_t(it->second.bytes), std::memory_order_relaxed);
  cache.erase(first, last);
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_PACKEDWEIGHTS_H
