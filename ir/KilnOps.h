//===- KilnOps.h - kiln dialect ops -------------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The op classes generated from KilnOps.td. Builders of ops that implement
// InferTypeOpInterface take only operands and attributes:
// `b.create<kiln::AddOp>(loc, lhs, rhs)`.
//===----------------------------------------------------------------------===//
#ifndef KILN_IR_KILNOPS_H
#define KILN_IR_KILNOPS_H

#include "ir/KilnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/KilnOps.h.inc"

#endif // KILN_IR_KILNOPS_H
