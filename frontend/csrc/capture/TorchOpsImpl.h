//===- TorchOpsImpl.h - shared helpers of the torch → kiln handlers -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to TorchOps.cpp (the op table, argument binding, elementwise,
// reduction and shape handlers) and TorchIndexing.cpp (indexing, slicing,
// concatenation, embedding and eval-mode batch_norm): parsed arguments,
// constant-argument helpers, torch type promotion and the Emit builder.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_TORCHOPSIMPL_H
#define KILN_FRONTEND_CAPTURE_TORCHOPSIMPL_H

#include "Interp.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <string>
#include <vector>

namespace kiln {

using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

/// Parsed arguments: by parameter name, with the rest positional.
struct Args {
  std::map<std::string, VarP> named;
  VarP get(const std::string &n) const {
    auto it = named.find(n);
    return it == named.end() ? nullptr : it->second;
  }
  bool isNone(const std::string &n) const {
    VarP v = get(n);
    return !v || (v->isConst() && v->obj.get() == Py_None);
  }
};

inline RankedTensorType ttype(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

inline VarP T(Value v) { return makeTensor(v); }

/// The Python int of constant `v` (Unsupported otherwise).
long asInt(const VarP &v, const char *what);
/// The Python number of constant `v` as a double.
double asDouble(const VarP &v, const char *what);
/// An int or a sequence of ints.
std::vector<int64_t> asInts(const VarP &v, const char *what);
/// torch's dim normalization (negative dims count from the end; a 0-d
/// tensor accepts -1 and 0); Unsupported when out of range.
int64_t normDim(int64_t d, int64_t rank);
/// torch.result_type over tensors and Python scalars.
DType resultType(const std::vector<VarP> &operands);
/// torch.get_default_dtype() of the capture in progress.
DType defaultFloat();

/// Applies mapped op `op` and records aliasing facts (TorchOps.cpp).
VarP applyTracked(Interpreter &I, const std::string &op, Args &a);
/// Indexing (`__getitem__`), narrow/select/chunk/split/unbind, cat/stack,
/// embedding and batch_norm (TorchIndexing.cpp): composed of tracked
/// primitive steps. nullptr when `op` is not one of them.
VarP applyCompositeOp(Interpreter &I, const std::string &op, Args &a);
/// The `__slice` primitive: a kiln.slice with constant start/end/step
/// tuples in `a` (TorchIndexing.cpp).
VarP applySlice(Interpreter &I, Args &a);

/// Small graph-building helpers bound to the interpreter's builder.
class Emit {
public:
  explicit Emit(Interpreter &I) : I(I), b(I.builder()) {}

  Type elt(DType d) { return elementType(*b.getContext(), d); }

  Value cast(Value v, DType d) {
    auto t = ttype(v);
    if (t.getElementType() == elt(d)) return v;
    return b.create<mlir::kiln::CastOp>(I.loc(), t.clone(elt(d)), v);
  }

  Value scalar(PyObject *o, DType d) {
    Type e = elt(d);
    auto type = RankedTensorType::get({}, e);
    mlir::Attribute a;
    if (llvm::isa<mlir::FloatType>(e)) {
      double x = PyFloat_AsDouble(o);
      a = mlir::DenseElementsAttr::get(type, b.getFloatAttr(e, x));
    } else if (e.isInteger(1)) {
      a = mlir::DenseElementsAttr::get(type, PyObject_IsTrue(o) == 1);
    } else {
      int64_t x = PyLong_AsLongLong(o);
      a = mlir::DenseElementsAttr::get(type, b.getIntegerAttr(e, x));
    }
    if (PyErr_Occurred()) { PyErr_Clear(); throw Unsupported("scalar out of range"); }
    return b.create<mlir::kiln::ConstantOp>(I.loc(), llvm::cast<mlir::ElementsAttr>(a));
  }

  Value operand(const VarP &v, DType d) {
    if (v->isTensor()) return cast(v->value, d);
    return scalar(constObj(v, "operand"), d);
  }

  /// Checks inference first so malformed user code becomes Unsupported
  /// (eager then raises torch's own error) instead of a fatal error.
  template <typename OpT>
  Value inferred(mlir::ValueRange operands) {
    llvm::SmallVector<Type> types;
    if (mlir::failed(OpT::inferReturnTypes(b.getContext(), I.loc(), operands, mlir::DictionaryAttr(), mlir::OpaqueProperties(nullptr), mlir::RegionRange(), types)))
      throw Unsupported(std::string("invalid operands for ") + OpT::getOperationName().str());
    return b.create<OpT>(I.loc(), types.front(), operands).getResult();
  }

  template <typename OpT>
  Value binary(const VarP &a, const VarP &c, std::optional<DType> force = {}) {
    DType d = force ? *force : resultType({a, c});
    return inferred<OpT>({operand(a, d), operand(c, d)});
  }

  template <typename OpT>
  Value unary(Value x) { return b.create<OpT>(I.loc(), x); }

  Value floatUnaryInput(const VarP &x) {
    Value v = x->value;
    DType d = dtypeOf(ttype(v).getElementType());
    return dtypeCategory(d) == 2 ? v : cast(v, defaultFloat());
  }

  Value reshape(Value v, llvm::ArrayRef<int64_t> shape) {
    auto t = ttype(v);
    if (t.getShape() == shape) return v;
    return b.create<mlir::kiln::ReshapeOp>(I.loc(), RankedTensorType::get(shape, t.getElementType()), v);
  }

  Value permute(Value v, llvm::ArrayRef<int64_t> dims) {
    return b.create<mlir::kiln::PermuteOp>(I.loc(), v, b.getDenseI64ArrayAttr(dims));
  }

  template <typename OpT>
  Value reduce(Value v, std::vector<int64_t> dims, bool keepdim) {
    int64_t rank = ttype(v).getRank();
    for (auto &d : dims) d = normDim(d, rank);
    if (rank == 0) dims.clear();
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    return b.create<OpT>(I.loc(), v, b.getDenseI64ArrayAttr(dims), b.getBoolAttr(keepdim));
  }

  Interpreter &I;
  mlir::OpBuilder &b;
};

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_TORCHOPSIMPL_H
