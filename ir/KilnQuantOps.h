//===- KilnQuantOps.h - kiln int8 quantization ops ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The op classes generated from KilnQuantOps.td (kiln.quantize,
// kiln.quantize_static, kiln.dequantize, kiln.int8_view, kiln.qlinear). Kept out of KilnOps.h so
// that only the quantization passes and the capture's quant handlers
// include them.
//===----------------------------------------------------------------------===//
#ifndef KILN_IR_KILNQUANTOPS_H
#define KILN_IR_KILNQUANTOPS_H

#include "ir/KilnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/KilnQuantOps.h.inc"

namespace mlir::kiln {
/// The kiln.quantize_static whose exact inverse defines `v`: `v` =
/// dequantize(quantize_static(x)) with the same zero point and the same
/// scale (a constant f32 splat); null for anything else.
QuantizeStaticOp staticallyQuantized(Value v);
} // namespace mlir::kiln

#endif // KILN_IR_KILNQUANTOPS_H
