//===- KilnDialect.h - the kiln dialect ---------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declares the kiln dialect class. Include ir/KilnOps.h for the ops.
//===----------------------------------------------------------------------===//
#ifndef KILN_IR_KILNDIALECT_H
#define KILN_IR_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/KilnDialect.h.inc"

#endif // KILN_IR_KILNDIALECT_H
