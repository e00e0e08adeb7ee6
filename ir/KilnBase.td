//===- KilnBase.td - kiln dialect definition and op base classes -*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `kiln` dialect models PyTorch tensor programs with value semantics on
// builtin ranked tensors. This file declares the dialect and the base classes
// that carry the common traits and assembly formats of its ops.
//===----------------------------------------------------------------------===//

#ifndef KILN_BASE_TD
#define KILN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::mlir::kiln";
  let summary = "Tensor-level ops mirroring PyTorch, with value semantics.";
  let description = [{
    The `kiln` dialect is the IR the kiln frontend captures PyTorch programs
    into. Its ops take and return builtin `tensor<...>` values (static or
    dynamic dims); there is no mutation. Elementwise ops broadcast like
    PyTorch (numpy rules, aligned from the trailing dimension) but do not
    promote types: operands of one op share an element type and the frontend
    inserts explicit `kiln.cast` ops to follow torch's type promotion.
  }];
  let hasConstantMaterializer = 1;
}

/// Every kiln op is side-effect free.
class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, !listconcat(traits, [Pure])>;

def Kiln_Tensor : RankedTensorOf<[AnyType]>;
def Kiln_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;

/// Elementwise op on one tensor; the result has the operand's type.
class Kiln_UnaryOp<string mnemonic, Type operandType = Kiln_Tensor,
                   list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

/// Float-only elementwise op on one tensor.
class Kiln_UnaryFloatOp<string mnemonic, list<Trait> traits = []>
    : Kiln_UnaryOp<mnemonic, Kiln_FloatTensor, traits>;

/// Elementwise op on two tensors with broadcasting. Operands share an element
/// type; the result shape is the broadcast of the operand shapes and is
/// inferred.
class Kiln_BroadcastingBinaryOp<string mnemonic, Type operandType = Kiln_Tensor,
                                Type resultType = Kiln_Tensor,
                                list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [
          DeclareOpInterfaceMethods<InferTypeOpInterface>])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

/// Broadcasting comparison: the result is a tensor of i1.
class Kiln_CompareOp<string mnemonic>
    : Kiln_BroadcastingBinaryOp<mnemonic, Kiln_Tensor, Kiln_BoolTensor>;

/// Reduction over `dims` (non-negative, unique, each < rank). With
/// `keepdim` the reduced dims stay as size 1, as in torch.
class Kiln_ReductionOp<string mnemonic, Type operandType = Kiln_Tensor>
    : Kiln_Op<mnemonic, [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let arguments = (ins operandType:$input, DenseI64ArrayAttr:$dims,
                   DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

#endif // KILN_BASE_TD
