//===- VectorMath.h - glibc's vector math library for the loop vectorizer ---===//
// SPDX-License-Identifier: Apache-2.0
//
// sin, cos and tan have no polynomial in ApproximateMath.cpp that is
// accurate at large arguments (rotary embeddings reach |x| = 1e4), so they
// reach LLVM as `llvm.sin/cos` intrinsics and `tanf`/`tan` calls. Without
// help the loop vectorizer leaves those scalar libm calls (2048² sin: 28 ms
// vs eager's 2 ms on one thread). glibc ships vector versions of them in
// libmvec (`_ZGVdN8v_sinf`: 8 lanes, AVX2; within 2 ulp at any argument,
// large ones reduced exactly), which LLVM's TargetLibraryInfo can name as
// the vector forms of the scalar calls. kiln tells the vectorizer about
// the widths the target machine can pass in registers, and links the
// JIT's objects (and kiln.export's libraries) against libmvec. The same
// holds for f32 atan/atan2/pow and every f64 function (never approximated):
// VectorMath.cpp's table lists them.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_VECTORMATH_H
#define KILN_CODEGEN_CPU_VECTORMATH_H

#include "llvm/Support/Error.h"

namespace llvm {
class TargetLibraryInfoImpl;
class TargetMachine;
namespace orc {
class JITDylib;
} // namespace orc
} // namespace llvm

namespace mlir::kiln {

/// Whether glibc's libmvec can be loaded in this process (loads it once).
bool vectorMathAvailable();

/// Adds libmvec's functions of VectorMath.cpp's table to `tli` as vector forms of
/// the scalar functions and intrinsics, for the widths `tm` passes in one
/// register (SSE always on x86-64, AVX2 and AVX-512 when `tm` has them).
/// Nothing when libmvec is missing or the target is not x86-64.
void addVectorMathFunctions(llvm::TargetLibraryInfoImpl &tli, const llvm::TargetMachine &tm);

/// Lets `dylib` resolve libmvec's `_ZGV*` symbols (an object compiled with
/// addVectorMathFunctions, possibly by another process: the disk cache).
llvm::Error addVectorMathSymbols(llvm::orc::JITDylib &dylib);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_VECTORMATH_H
