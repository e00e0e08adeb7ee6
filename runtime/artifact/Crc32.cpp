//===- Crc32.cpp - the artifact's CRC-32, fast ------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// crc32Of (Artifact.h): zlib's CRC-32 (the one the writer computes with
// Python's zlib.crc32), but folded 64 bytes at a time with carry-less
// multiplication (x86-64 PCLMULQDQ) where the CPU has it: checking the
// weights dominated a load (zlib's table-driven loop runs at ~1 GB/s; the
// folding loop at memory speed). The method is the one of Intel's "Fast
// CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction"
// (2009): fold four 128-bit lanes by x^(512+-32), then one lane by
// x^(128+-32), reduce 128 to 64 bits, then a Barrett reduction to 32; the
// constants are those powers of x modulo the bit-reflected polynomial
// 0xEDB88320. Lengths below 64 bytes and the last len % 16 bytes go
// through zlib; other CPUs use zlib throughout.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kiln::rt::artifact {
namespace {

/// zlib's crc32 over any length (its length type is 32-bit).
uint32_t zlibCrc(uint32_t crc, const uint8_t *p, uint64_t size) {
  while (size > 0) {
    uInt chunk = size > (1u << 30) ? (1u << 30) : (uInt)size;
    crc = (uint32_t)crc32(crc, p, chunk);
    p += chunk;
    size -= chunk;
  }
  return crc;
}

#if defined(__x86_64__)
#define KILN_CLMUL __attribute__((target("pclmul,sse4.1")))

KILN_CLMUL inline __m128i fold(__m128i acc, __m128i k, __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(hi, lo), next);
}

/// The CRC state (inverted, as zlib keeps it internally) after `len`
/// bytes at `p`; len >= 64 and a multiple of 16.
KILN_CLMUL uint32_t foldCrc(const uint8_t *p, uint64_t len, uint32_t state) {
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
  auto load = [](const uint8_t *q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
  };
  __m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)state));
  __m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);
  for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
    x1 = fold(x1, k1k2, load(p));
    x2 = fold(x2, k1k2, load(p + 16));
    x3 = fold(x3, k1k2, load(p + 32));
    x4 = fold(x4, k1k2, load(p + 48));
  }
  x1 = fold(x1, k3k4, x2);
  x1 = fold(x1, k3k4, x3);
  x1 = fold(x1, k3k4, x4);
  for (; len >= 16; p += 16, len -= 16)
    x1 = fold(x1, k3k4, load(p));
  // 128 -> 64 bits, then Barrett reduction to 32.
  const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
  __m128i x = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(x1, k3k4, 0x10));
  x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), k5, 0x00), _mm_srli_si128(x, 4));
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
  return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, t), 1);
}

bool hasClmul() {
  __builtin_cpu_init();
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return has;
}
#endif

} // namespace

uint32_t crc32Update(uint32_t crc, const void *data, uint64_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
#if defined(__x86_64__)
  if (size >= 64 && hasClmul()) {
    uint64_t body = size & ~uint64_t(15);
    crc = ~foldCrc(p, body, ~crc);
    p += body;
    size -= body;
  }
#endif
  return zlibCrc(crc, p, size);
}

uint32_t crc32Of(const void *data, uint64_t size) { return crc32Update(0, data, size); }

} // namespace kiln::rt::artifact
