//===- Builtins.h - compiler builtins the host's libgcc lacks ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// LLVM lowers some conversions to calls into compiler-rt's builtins when
// the CPU has no instruction for them: f32 → bf16 (`__truncsfbf2`) on a CPU
// without AVX-512 BF16, f64 → bf16 (`__truncdfbf2`) on any. Debian's libgcc (GCC 12) does not
// define it, so a JIT'd graph with bf16 results would fail to link there; kiln provides it (mapped
// by codegen/cpu/RuntimeSymbols.cpp).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_BUILTINS_H
#define KILN_RUNTIME_CPU_BUILTINS_H

#include <cstdint>

extern "C" {
/// f32 → bf16, rounding to nearest even (NaNs stay quiet NaNs). Follows
/// compiler-rt's `__truncsfbf2` ABI on x86-64: the bf16 is returned in the
/// low 16 bits of XMM0, which is where a `float` return value lives, so the
/// result is a float whose low 16 bits are the bf16's bits.
float kilnTruncSfBf2(float x);
/// f64 → bf16 (`__truncdfbf2`) as torch converts: to float (nearest even),
/// then kilnTruncSfBf2 (a double just above a bf16 tie rounds as the tie,
/// as in eager); returned as kilnTruncSfBf2 returns.
float kilnTruncDfBf2(double x);
}

namespace kiln::rt {
/// The bf16 bits of `x`, rounded to nearest even (the scalar behind
/// kilnTruncSfBf2).
uint16_t floatToBf16Bits(float x);
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_BUILTINS_H
