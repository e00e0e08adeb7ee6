//===- TorchOpsImpl.h - shared helpers of the torch → kiln handlers -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to the torch → kiln handlers in the category files (Core*.cpp,
// Factories.cpp, TorchIndexing.cpp, TorchOps*.cpp), which register their ops
// into the one OpRegistry (OpRegistry.h): constant-argument helpers
// (OpArguments.cpp), torch type promotion, tracked application of ops
// (OpTracking.cpp) and the Emit builder.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_TORCHOPSIMPL_H
#define KILN_FRONTEND_CAPTURE_TORCHOPSIMPL_H

#include "capture/interp/Interp.h"
#include "capture/ops/OpRegistry.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

inline RankedTensorType ttype(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

inline VarP T(Value v) { return makeTensor(v); }

/// The DType of tensor value `v`.
inline DType dtypeOfValue(Value v) { return dtypeOf(ttype(v).getElementType()); }
/// Whether `d` is a 16-bit float (computed in f32 by torch's opmath).
inline bool isNarrow(DType d) { return d == DType::F16 || d == DType::BF16; }
/// Whether tensor value `v` has a floating-point dtype.
inline bool isFloatValue(Value v) { return isFloatingDType(dtypeOfValue(v)); }

/// The Python int of constant `v` (Unsupported otherwise).
long asInt(const VarP &v, const char *what);
/// The Python number of constant `v` as a double.
double asDouble(const VarP &v, const char *what);
/// Whether `v` is the Python float NaN (a constant).
bool isNanFloatConst(const VarP &v);
/// An int or a sequence of ints.
std::vector<int64_t> asInts(const VarP &v, const char *what);
/// Like asInts, but a SymInt item (a symbolic size) becomes `?`
/// (ShapedType::kDynamic; its captured value in the shadow static
/// capture): reshape/view targets.
std::vector<int64_t> shapeArg(const VarP &v, const char *what);
/// Whether `v` (an int or a sequence) holds a SymInt that is `?` in the
/// graph's types (not one of the shadow static capture).
/// An empty meta tensor with `value`'s static shape and dtype (a new
/// reference); null, with no Python error set, for a symbolic shape or when
/// torch cannot make one (Fallback.cpp).
PyRef metaTensorOf(mlir::Value value);
/// A user-error break where eager has no kernel for the dtypes of mapped op
/// `op`'s bool/integer tensor arguments (tried on one-element tensors:
/// EagerDTypeChecks.cpp). `callee` is the torch callable, or null for
/// Tensor method `method` with self first in `args`.
void checkEagerAcceptsDTypes(PyObject *callee, const std::string &method, const OpDef &op,
                             const std::vector<VarP> &args,
                             const std::map<std::string, VarP> &kwargs);
/// An in-place update of view `target` (its new value `result`) written
/// through to the tensor at the root of its view chain (a graph input, or
/// a tensor the graph computed), whose live views are all rebuilt from
/// the new root (ViewWrites.cpp); `target` a root with live views:
/// rebound, its views rebuilt. Unsupported when a view cannot be rebuilt
/// exactly or the view's elements overlap. Returns `target`.
VarP writeThroughView(Interpreter &I, const VarP &target, mlir::Value result,
                      const std::string &what, int bumps);
bool hasSymInt(const VarP &v);
/// Whether `v` (an int or a sequence) holds any SymInt.
bool anySymInt(const VarP &v);
/// torch's dim normalization (negative dims count from the end; a 0-d
/// tensor accepts -1 and 0); Unsupported when out of range.
int64_t normDim(int64_t d, int64_t rank);
/// torch.result_type over tensors and Python scalars.
DType resultType(const std::vector<VarP> &operands);
/// torch.get_default_dtype() of the capture in progress.
DType defaultFloat();

/// The promotion category of Python scalar `o` (nullopt: not a bool, int
/// or float).
std::optional<DTypeCategory> scalarCategory(PyObject *o);
/// The dtype torch gives a Python scalar of category `c` (bool, int64 or
/// the default float).
DType scalarDType(DTypeCategory c);
/// The dtype of Scalar Var `v`'s tensor (ops/Scalars.cpp): F64 for a
/// Python float, I64 for an int, Bool for a bool.
DType dtypeOfScalar(const VarP &v);

/// The row of advanced indexing x[i0, ..., ik-1] in x viewed as
/// [prod(dims[:k]), ...] (dims: the sizes of x's first k dims, Consts or
/// SymInts): sum_j pos_j * stride_j, pos_j = i_j wrapped when negative.
/// With several indices the row of an index outside its own dim (whose sum
/// may still land in the table) is -1, so the lookup's range check
/// (IndexChecks.cpp) raises eager's IndexError (TorchIndexing.cpp).
VarP advancedRow(Interpreter &I, const std::vector<VarP> &indices, const std::vector<VarP> &dims);
/// An int64 index tensor with negative entries wrapped: i + (i < 0) * size.
VarP wrapIndex(Interpreter &I, const VarP &i64, const VarP &size);
/// `row`, -1 where the bool tensor `bad` holds (row - bad * (row + 1)): the
/// row lookup then raises eager's IndexError after the graph.
VarP failingRow(Interpreter &I, const VarP &row, const VarP &bad);
/// Symbolic size expression `e` as a 0-d int64 value of the graph computed
/// from the inputs' sizes, or a Python int for a constant (OpTracking.cpp).
VarP symbolicSizeValue(Interpreter &I, const SizeExpr &e);
/// `v` as a Python number computed in the graph (a Scalar of type int)
/// when it is a SymInt with a tracked expression; `v` itself otherwise.
VarP symIntAsScalar(Interpreter &I, const VarP &v);
/// Applies op `op` to bound arguments, recording aliasing facts (views,
/// fresh results) and applying `inplace=True` (OpTracking.cpp).
VarP applyTracked(Interpreter &I, const OpDef &op, Args &a);
/// Applies registered op `op` (by its kiln-level name) through applyTracked.
VarP applyTracked(Interpreter &I, const std::string &op, Args &a);
/// Makes `r`, a view of `in` made by torch call `step`, rebuildable from
/// the graph input or graph-computed tensor `in` views (or is itself): the
/// steps that rebuild `in` plus `step`. A view of anything else keeps no
/// steps (it is returned as a copy) (OpTracking.cpp).
void recordViewStep(const VarP &in, const VarP &r, Var::ViewStep step);
/// Applies `op` as an in-place update of its `input` (`what` names the call
/// in errors): only a graph-computed tensor nothing views may be updated.
VarP applyInPlace(Interpreter &I, const OpDef &op, Args &a, const std::string &what);
/// Whether `Tensor.<name>` is an indexed in-place write (scatter_,
/// index_put_, index_add_ ...) captured as its out-of-place form (InPlace.cpp).
bool isIndexedWrite(const std::string &name);

/// Python constants as Vars.
VarP constInt(int64_t v);
VarP constFloat(double v);
VarP constBool(bool v);
VarP constIntTuple(llvm::ArrayRef<int64_t> v);
/// Applies mapped op `op` (tracked) to named arguments.
VarP callOp(Interpreter &I, const std::string &op,
            std::initializer_list<std::pair<const char *, VarP>> args);
/// The tensor of `v` (Unsupported naming `op` when it is not one).
Value tensorArg(const VarP &v, const std::string &op);
/// A bool argument (`dflt` when absent or None).
bool boolArg(const Args &a, const char *name, bool dflt);
/// A float argument (`dflt` when absent or None).
double floatArg(const Args &a, const char *name, double dflt);
/// An int argument (`dflt` when absent or None).
int64_t intArg(const Args &a, const char *name, int64_t dflt);
/// A str argument (`dflt` when absent or None).
std::string strArg(const Args &a, const char *name, const std::string &dflt);
/// A result tensor that eager returns as a new tensor: marked as a copy
/// when it is the input's value itself.
VarP freshResult(Value v);
/// The tensor `input` of a core op (`condition` for where); Unsupported
/// naming `op` when it is missing.
VarP inputArg(const Args &a, const std::string &op);

/// Checks that a tensor factory's `device=` (None: torch's default device,
/// or the input's for `like` forms) is the graph's device; Unsupported
/// naming both otherwise (Factories.cpp).
void checkFactoryDevice(Interpreter &I, const std::string &op, const Args &a, bool like);
/// checkFactoryDevice and the keywords kiln supports only at their
/// defaults (out, layout, requires_grad, pin_memory, memory_format);
/// returns the factory's `dtype=`, if any (Factories.cpp).
std::optional<DType> factoryDType(Interpreter &I, const std::string &op, const Args &a, bool like);
/// The sizes of a factory's result: `shape` when static, else `symDims`.
struct FactorySizes {
  std::vector<int64_t> shape;
  std::vector<VarP> symDims; ///< sizes when some are symbolic
};
/// The sizes of `x` (a `_like` factory's input).
FactorySizes likeSizes(Interpreter &I, Value x);
/// The sizes of a factory's `size` argument (`*size` varargs or a sequence).
FactorySizes sizeArgument(const std::string &op, const Args &a);

/// `x` with dropout in training mode (RandomOps.cpp): each element (each
/// channel: the first `rank - spatialDims` dims, for dropout1d/2d/3d) kept
/// with probability 1 - p and scaled by 1 / (1 - p), as eager's
/// `input * bernoulli(1 - p) / (1 - p)`; one random stream of the graph.
Value trainingDropout(Interpreter &I, Value x, double p, int64_t spatialDims = 0);

/// Small graph-building helpers bound to the interpreter's builder.
class Emit {
public:
  explicit Emit(Interpreter &I) : I(I), b(I.builder()) {}

  Type elt(DType d) { return elementType(*b.getContext(), d); }

  Value cast(Value v, DType d) {
    auto t = ttype(v);
    if (t.getElementType() == elt(d))
      return v;
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
    if (PyErr_Occurred())
      throw Unsupported(BreakCategory::UnsupportedOp, withPythonError("scalar out of range"));
    return b.create<mlir::kiln::ConstantOp>(I.loc(), llvm::cast<mlir::ElementsAttr>(a));
  }

  Value operand(const VarP &v, DType d) {
    if (!v) // a required argument was not passed: eager raises TypeError
      throw Unsupported(BreakCategory::UserError, "an operand is missing (eager raises)");
    if (v->isTensor())
      return cast(v->value, d);
    if (v->kind == Var::Kind::Scalar) // as a Python number of its value
      return cast(v->scalar, d);
    return scalar(constObj(v, "operand"), d);
  }

  /// Checks inference first so malformed user code becomes Unsupported
  /// (eager then raises torch's own error) instead of a fatal error.
  template <typename OpT> Value inferred(mlir::ValueRange operands) {
    llvm::SmallVector<Type> types;
    if (mlir::failed(OpT::inferReturnTypes(b.getContext(), I.loc(), operands,
                                           mlir::DictionaryAttr(), mlir::OpaqueProperties(nullptr),
                                           mlir::RegionRange(), types)))
      throw Unsupported(std::string("invalid operands for ") + OpT::getOperationName().str());
    return b.create<OpT>(I.loc(), types.front(), operands).getResult();
  }

  template <typename OpT>
  Value binary(const VarP &a, const VarP &c, std::optional<DType> force = {}) {
    DType d = force ? *force : resultType({a, c});
    // f16/bf16 times or divided by a Python number: eager's mul and div
    // kernels take the number at f32 (opmath) precision and round the result
    // once (`3.3 / x` is `x.reciprocal() * 3.3`); rounding 1.1 to f16 first
    // changes about half the results. Its add, sub, comparisons and the rest
    // round the number to f16 first.
    constexpr bool mul = std::is_same_v<OpT, mlir::kiln::MulOp>;
    constexpr bool div = std::is_same_v<OpT, mlir::kiln::DivOp>;
    auto number = [](const VarP &v) { return v && !v->isTensor(); };
    if ((mul || div) && (d == DType::F16 || d == DType::BF16) && number(a) != number(c)) {
      if (div && number(a)) {
        Value reciprocal =
            inferred<OpT>({scalar(PyRef::steal(PyFloat_FromDouble(1)).get(), d), operand(c, d)});
        return cast(
            inferred<mlir::kiln::MulOp>({cast(reciprocal, DType::F32), operand(a, DType::F32)}), d);
      }
      return cast(inferred<OpT>({operand(a, DType::F32), operand(c, DType::F32)}), d);
    }
    return inferred<OpT>({operand(a, d), operand(c, d)});
  }

  template <typename OpT> Value unary(Value x) { return b.create<OpT>(I.loc(), x); }

  Value floatUnaryInput(const VarP &x) {
    Value v = tensorArg(x, "a float op");
    DType d = dtypeOf(ttype(v).getElementType());
    return isFloatingDType(d) ? v : cast(v, defaultFloat());
  }

  Value reshape(Value v, llvm::ArrayRef<int64_t> shape) {
    auto t = ttype(v);
    if (t.getShape() == shape)
      return v;
    return b.create<mlir::kiln::ReshapeOp>(I.loc(),
                                           RankedTensorType::get(shape, t.getElementType()), v);
  }

  Value permute(Value v, llvm::ArrayRef<int64_t> dims) {
    return b.create<mlir::kiln::PermuteOp>(I.loc(), v, b.getDenseI64ArrayAttr(dims));
  }

  /// Builds `OpT` with `attrs`, inferring its result type when it has
  /// InferTypeOpInterface (else it takes `operands[0]`'s type); failed
  /// inference or verification erases it and throws Unsupported naming
  /// `what`, so an invalid call never aborts the process.
  template <typename OpT>
  Value checked(mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs,
                const std::string &what) {
    mlir::Type placeholder = operands.front().getType();
    auto op = b.create<OpT>(I.loc(), mlir::TypeRange{placeholder}, operands, attrs);
    mlir::Operation *raw = op.getOperation();
    if constexpr (OpT::template hasTrait<mlir::InferTypeOpInterface::Trait>()) {
      llvm::SmallVector<Type> types;
      if (mlir::failed(OpT::inferReturnTypes(b.getContext(), raw->getLoc(), raw->getOperands(),
                                             raw->getAttrDictionary(), raw->getPropertiesStorage(),
                                             raw->getRegions(), types))) {
        raw->erase();
        throw Unsupported("invalid arguments for " + what + " (eager raises)");
      }
      raw->getResult(0).setType(types.front());
    }
    if (mlir::failed(mlir::verify(raw, /*verifyRecursively=*/false))) {
      raw->erase();
      throw Unsupported("invalid arguments for " + what + " (eager raises)");
    }
    return raw->getResult(0);
  }

  /// A constant of `shape` and dtype `d` from `values` (row-major).
  Value dense(llvm::ArrayRef<int64_t> shape, DType d, llvm::ArrayRef<double> values) {
    if (mlir::ShapedType::isDynamicShape(shape))
      throw Unsupported("a constant of symbolic shape");
    Type e = elt(d);
    auto type = RankedTensorType::get(shape, e);
    llvm::SmallVector<mlir::Attribute> attrs;
    for (double v : values) {
      if (llvm::isa<mlir::FloatType>(e))
        attrs.push_back(b.getFloatAttr(e, v));
      else if (e.isInteger(1))
        attrs.push_back(b.getIntegerAttr(e, v != 0));
      else
        attrs.push_back(b.getIntegerAttr(e, static_cast<int64_t>(v)));
    }
    return b.create<mlir::kiln::ConstantOp>(
        I.loc(), llvm::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(type, attrs)));
  }

  /// A 0-d constant `v` of dtype `d`.
  Value num(double v, DType d) { return dense({}, d, {v}); }

  /// A splat constant of `shape`.
  Value splat(llvm::ArrayRef<int64_t> shape, DType d, double v) {
    if (mlir::ShapedType::isDynamicShape(shape))
      throw Unsupported("a constant of symbolic shape");
    Type e = elt(d);
    auto type = RankedTensorType::get(shape, e);
    mlir::Attribute a = llvm::isa<mlir::FloatType>(e) ? mlir::Attribute(b.getFloatAttr(e, v))
                        : e.isInteger(1)              ? mlir::Attribute(b.getBoolAttr(v != 0))
                                         : mlir::Attribute(b.getIntegerAttr(e, (int64_t)v));
    return b.create<mlir::kiln::ConstantOp>(
        I.loc(), llvm::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(type, a)));
  }

  /// Broadcasting binary op on values of one element type.
  template <typename OpT> Value bin(Value x, Value y) { return inferred<OpT>({x, y}); }

  /// Marks `v`, a kiln.maximum/minimum, with how kiln's autodiff splits the
  /// gradient where its operands tie (`kiln.tie_grad`, NNGrads.cpp): "half"
  /// to each (torch.maximum, and formulas whose eager backward is smooth at
  /// the tie: logsigmoid's min(x, 0)), "all" to the first operand
  /// (torch.clamp keeps the gradient at its bounds). Unmarked: halves
  /// between two operands needing gradients, none for a constant bound
  /// (hardtanh, relu6).
  /// Marks `v`, a kiln.sqrt of a sum of squares or a variance (norm, std,
  /// cosine_similarity), whose gradient is 0 where it is 0 (`kiln.
  /// grad_at_zero`, ElementwiseGrads.cpp), as eager's norm and std backward
  /// mask it: plain sqrt's infinite slope times a zero gave NaN gradients for
  /// an all-zero row.
  Value zeroGradAtZero(Value v) {
    if (mlir::Operation *op = v.getDefiningOp())
      op->setAttr("kiln.grad_at_zero", b.getStringAttr("zero"));
    return v;
  }

  Value tieGrad(Value v, llvm::StringRef policy) {
    if (mlir::Operation *op = v.getDefiningOp())
      if (llvm::isa<mlir::kiln::MaximumOp, mlir::kiln::MinimumOp>(op))
        op->setAttr("kiln.tie_grad", b.getStringAttr(policy));
    return v;
  }

  Value select(Value c, Value t, Value f) { return inferred<mlir::kiln::SelectOp>({c, t, f}); }

  template <typename OpT> Value reduce(Value v, std::vector<int64_t> dims, bool keepdim) {
    int64_t rank = ttype(v).getRank();
    for (auto &d : dims)
      d = normDim(d, rank);
    if (rank == 0)
      dims.clear();
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    return b.create<OpT>(I.loc(), v, b.getDenseI64ArrayAttr(dims), b.getBoolAttr(keepdim));
  }

  Interpreter &I;
  mlir::OpBuilder &b;
};

/// A float computation in torch's opmath type: f16/bf16 inputs are cast to
/// f32, the result back to the input's type.
struct Opmath {
  Opmath(Emit &e, Value x) : e(e), type(dtypeOfValue(x)) {}
  /// The dtype the computation runs in.
  DType compute() const { return isNarrow(type) ? DType::F32 : type; }
  /// `x` in the compute dtype.
  Value in(Value x) { return e.cast(x, compute()); }
  /// Result `r` back in the input's dtype.
  Value out(Value r) { return e.cast(r, type); }
  /// A 0-d constant in the compute dtype.
  Value num(double v) { return e.num(v, compute()); }

  Emit &e;
  DType type; ///< the input's dtype
};

/// Activation registrations (TorchOpsActivation.cpp), called by
/// registerElementwiseOps.
void registerActivationOps(OpRegistry &r);
/// floor_divide, remainder, fmod, div(rounding_mode=) and the // and %
/// operators (TorchOpsDivision.cpp); called by registerElementwiseOps.
void registerDivisionOps(OpRegistry &r);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_TORCHOPSIMPL_H
