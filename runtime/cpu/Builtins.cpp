//===- Builtins.cpp - compiler builtins the host's libgcc lacks ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Builtins.h.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Builtins.h"

#include <cstring>

namespace kiln::rt {

uint16_t floatToBf16Bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign, make it quiet
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb; // round to nearest, ties to even (overflow gives inf)
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace kiln::rt

extern "C" float kilnTruncSfBf2(float x) {
  uint32_t bits = kiln::rt::floatToBf16Bits(x);
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

extern "C" float kilnTruncDfBf2(double x) {
  return kilnTruncSfBf2(static_cast<float>(x)); // through float, as torch's BFloat16(double)
}
