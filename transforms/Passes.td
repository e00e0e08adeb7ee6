//===- Passes.td - kiln transformation passes -----------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes on kiln IR. Grouped by stage, alphabetical within a group.
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Decomposition
//===----------------------------------------------------------------------===//

def DecomposePass : Pass<"kiln-decompose", "func::FuncOp"> {
  let summary = "Rewrites composite kiln ops into the primitive set";
  let description = [{
    Precondition: kiln ops with broadcasting operands of equal element type.
    Postcondition: no `kiln.softmax`, `kiln.layer_norm` or `kiln.silu`
    remain; they are expressed with reductions (`kiln.sum`, `kiln.mean`,
    `kiln.max`) and elementwise ops so fusion and codegen see only the
    primitive set listed in docs/invariants.md.

    Example: `kiln.softmax %x {dim = 1}` becomes
    `e = exp(x - max(x, [1], keepdim)); e / sum(e, [1], keepdim)`.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

#endif // KILN_TRANSFORMS_PASSES_TD
