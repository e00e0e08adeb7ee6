//===- Value.h - the symbolic interpreter's abstract values -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture: `Var`, the abstract value on the
// interpreter's stack, in its locals and inside containers built during
// capture (a tensor as kiln IR, a guarded Python constant, a tuple/list/dict
// of Vars, a symbolic size, a lazy read ...), with its constructors and the
// helpers of dicts built in the frame (Value.cpp). The interpreter that
// makes them is capture/interp/Interp.h.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_VALUE_H
#define KILN_FRONTEND_CAPTURE_VALUES_VALUE_H

#include "capture/Capture.h"

#include "mlir/IR/Value.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct Var;
/// Vars are shared: a value may be on the stack, in locals and in containers
/// at once, and in-place changes (materializing a lazy value) reach every holder.
using VarP = std::shared_ptr<Var>;

/// An abstract value on the interpreter's stack or in a local.
struct Var {
  enum class Kind {
    Null,         ///< the NULL CPython pushes before some calls
    Tensor,       ///< a kiln IR value
    Const,        ///< a concrete Python object (guarded if it has a source)
    Tuple,        ///< tuple of Vars
    List,         ///< list of Vars
    Iter,         ///< iterator over `items`
    BoundMethod,  ///< `obj` is a Python function, `self` its receiver
    TensorMethod, ///< method `name` of tensor `self`
    ListMethod,   ///< method `name` (append/extend) of list `self`
    Cell,         ///< a closure cell: `items` holds its content (0 or 1);
                  ///< a real cell (`obj`) is read lazily from `source`
    Function,     ///< a function made by MAKE_FUNCTION during capture:
                  ///< `obj` the function, `items` its closure cells
    Dict,         ///< dict built during capture: `keys` (constants), `items`
    SymInt,       ///< a symbolic size read as a Python int (x.shape[0] of a
                  ///< `?` dim) or an expression of such sizes (`sym`,
                  ///< `captured`; SymbolicSizes.cpp): reshape/view targets,
                  ///< arithmetic, guarded comparisons and factory sizes take
                  ///< it, anything else fails the capture, which is then
                  ///< retried with static sizes
    Lazy,         ///< a value nothing has depended on yet (LazyValues.cpp):
                  ///< an int/float/str/bool or list read from `source`
                  ///< (unguarded), or `+ - *` (`name`) on `items`; `obj` its
                  ///< value at capture. Side effects store it as an
                  ///< expression evaluated at replay; any other use
                  ///< materializes it (guarded Const / the list's Var).
    SymSlice,     ///< a slice with a SymInt bound: `items` start, stop, step
                  ///< (None constants where absent); only tensor indexing
                  ///< takes it (SymbolicIndexing.cpp)
    Object,       ///< an instance of a plain Python class made during capture
                  ///< (UserObjects.cpp): `obj` its class, `keys`/`items`
                  ///< its attributes (instance dict or slots) in the order
                  ///< they were set, `self` the Var the class was read from
    Scalar,       ///< a Python number known only when the graph runs (`.item()`,
                  ///< `float(t)` ...; ops/Scalars.cpp): `scalar` a 0-d tensor of
                  ///< it (f64 for a float, i64 for an int, i1 for a bool), `obj`
                  ///< its Python type. Arithmetic with numbers, tensor operands
                  ///< and comparisons take it; it escapes (returned, stored, live
                  ///< at a break) as the Python number; anything else breaks
    Ndarray,      ///< a NumPy array (interp/NumpyInterop.cpp): `self` the Tensor
                  ///< Var holding its data (shared with the tensor it came from
                  ///< or goes to: `.numpy()`/`from_numpy` alias as in eager);
                  ///< `name` "scalar" for a NumPy scalar (a 0-d result). It
                  ///< escapes as `t.numpy()` (`[()]` for a scalar)
  };
  Kind kind = Kind::Null;
  mlir::Value value;
  /// Const: the object; Tuple: the torch.return_types class of an op's
  /// (values, indices) result, or null; see the kinds above for others.
  PyRef obj;
  int source = -1;
  std::vector<VarP> items;
  std::vector<PyRef> keys; ///< Dict: the keys, parallel to `items`
  size_t pos = 0;
  VarP self;
  std::string name;
  /// Tensor: produced by a computing op inside the graph (not an input, not
  /// a view), so an in-place update may rebind it.
  bool fresh = false;
  /// Tensor: some view op took it as input (in-place updates would be
  /// visible through the view, so they are not supported).
  bool viewed = false;
  /// Tensor: a copy (`clone()`) in eager: it must not be returned as the same
  /// tensor object as an input or another result.
  bool copied = false;
  /// Tensor: a view step of an input that copies in eager (ViewSteps.h): a
  /// new contiguous tensor (fresh and copied; layout queries answer so).
  bool contiguousCopy = false;
  /// Tensor: `viewBase.contiguous()`: in eager the base itself where the base
  /// is contiguous, else a copy (`is` between the two cannot be answered).
  bool selfIfContiguous = false;
  /// Tensor: a view (chain) of graph input `viewInput`; returned, it is
  /// rebuilt by replaying `viewSteps` (method name, argument tuple) on the
  /// caller's tensor so that it aliases the input as in eager.
  int viewInput = -1;
  /// One replayed call: method `first` with positional `second` (a tuple)
  /// and keywords `kwargs` (a dict, or null).
  struct ViewStep {
    std::string first;
    PyRef second;
    PyRef kwargs;
  };
  std::vector<ViewStep> viewSteps;
  /// Tensor: a view (chain) of a tensor the graph computed, whose value is
  /// `viewRoot` (set only when `viewInput` is not): returned, it is rebuilt
  /// by replaying `viewSteps` on that graph result, so that it aliases the
  /// root and the root's other views as in eager.
  mlir::Value viewRoot;
  /// Tensor: a view op took it whose result cannot be rebuilt by replaying
  /// view steps (that view is returned as a copy, not aliasing it).
  bool opaqueViews = false;
  /// Tensor: the caller's tensor object read as graph input `inputIndex`
  /// (one Var per source, so every read sees its in-place updates); an
  /// in-place op rebinds `value` and writes the new value back into the
  /// caller's tensor after the graph (ops/InPlace.cpp). -1: not an input.
  int inputIndex = -1;
  /// Tensor views: `viewBase` is the tensor a view op made this one from
  /// (held, so a chain of views keeps its links), `views` the views made
  /// from this one (weak: a view nothing holds any more cannot see an
  /// in-place update, so it does not forbid one; ops/InPlace.cpp).
  VarP viewBase;
  std::vector<std::weak_ptr<Var>> views;
  /// Tensor: a view read as `itemOf[itemIndex]` with a constant index; an
  /// in-place update of it is also assigned into `itemOf` (`x[i] += 1`).
  VarP itemOf;
  PyRef itemIndex;
  /// Tensor: batched by the innermost `vmapLevels` enclosing torch.vmap
  /// levels (Vmap.cpp): its first `vmapLevels` dims are those levels (size
  /// 1 where it does not vary), the rest its per-example shape.
  int vmapLevels = 0;
  /// List/Dict: a container of the caller that the capture mutated (its
  /// mutations are replayed on the caller's object; SideEffects.cpp).
  bool mutatedContainer = false;
  /// Lazy list: mutations not applied to any read of it yet, in order
  /// (method name, index for insert/pop, value).
  struct PendingOp {
    std::string method;
    PyRef index;
    VarP value;
  };
  std::vector<PendingOp> pending;
  /// SymInt: its expression over Capture::symbols (null: a `?` dim whose
  /// symbol kiln does not track; only reshape targets take it), its value
  /// at capture, and whether the graph's types use that value (the shadow
  /// static capture, DynamicPolicy::shadow) rather than `?`.
  SizeExprP sym;
  int64_t captured = 0;
  bool staticSym = false;
  /// Scalar: its value as a 0-d tensor of the graph (`value` stays null, so
  /// no tensor path takes a Scalar by mistake).
  mlir::Value scalar;

  /// Iter: makes the next item on demand once `items` are used up (a
  /// generator's frame resumed to its next yield, zip/map/itertools over
  /// other iterators; interp/Iterators.cpp); returns nullptr when exhausted.
  std::function<VarP()> produce;
  /// Iter: a dict view (`self` the Dict Var, `name` keys/values/items):
  /// each iteration starts over and reads the dict as it is then.
  bool reiterable = false;
  /// Dict: collections.OrderedDict or defaultdict when made as one (null:
  /// a dict); a defaultdict's default factory is `self`.
  PyRef dictType;
  /// Function: defaults (a Tuple Var) / keyword defaults (a Dict Var)
  /// that are not all constants (values computed in the frame); null when
  /// they are set on `obj` itself. Such a function never leaves the frame.
  VarP fnDefaults, fnKwDefaults;

  bool isConst() const { return kind == Kind::Const; }
  bool isTensor() const { return kind == Kind::Tensor; }
  /// A lazy read of a caller's list (LazyValues.cpp).
  bool isLazyList() const {
    return kind == Kind::Lazy && name.empty() && obj && PyList_CheckExact(obj.get());
  }
};

/// A Const Var of `obj`, read from `source` (-1: none).
VarP makeConst(PyRef obj, int source = -1);
/// A Tensor Var of kiln IR value `v`.
VarP makeTensor(mlir::Value v);
/// A Scalar Var: 0-d tensor `v` (f64/i64/i1) read as a Python `type`.
VarP makeScalar(mlir::Value v, PyObject *type);
/// A Var of `kind` (Tuple, List, Iter, SymSlice ...) holding `items`.
VarP makeSeq(Var::Kind kind, std::vector<VarP> items);
/// Index of `key` in dict var `d`, or -1.
int dictFind(const VarP &d, PyObject *key);
/// Sets `d[key] = value` in dict var `d` built in the frame (replacing an
/// equal key's item); throws Unsupported for an unhashable key.
void dictSet(const VarP &d, PyObject *key, VarP value);
/// `d.pop(key[, default])` on dict var `d` built in the frame (removes the
/// item); throws Unsupported for a missing key without a default.
VarP dictPop(const VarP &d, const std::vector<VarP> &args,
             const std::map<std::string, VarP> &kwargs);
/// Whether constant `o` (and what it holds) compares and hashes without
/// running Python code, and is no function (ContainerMethods.cpp).
bool pureConstant(PyObject *o, int depth = 0);
/// A ListMethod Var for method `attr` of a Dict/List Var built or tracked
/// in the frame (ContainerMethods.cpp); nullptr for other values or names.
VarP containerMethodVar(const VarP &obj, const std::string &attr);
/// A tuple/list Var whose items are all constants (recursively) as a Python
/// tuple/list; null otherwise.
PyRef seqAsConst(const VarP &v, int depth = 0);
/// The Python object of a Const var (borrowed from it), or throws
/// Unsupported (Interpreter.cpp: a container the capture mutated is not
/// read as a constant).
PyObject *constObj(const VarP &v, const char *what);
/// Throws Unsupported when `v` is a Const Var of a caller's list/dict that
/// the capture mutated through another Var (an alias of it read before the
/// mutation, which is replayed after the graph): its contents are stale.
void refuseMutatedAlias(const VarP &v);
/// A new tuple of the Python objects of Const vars (Unsupported otherwise).
PyRef constTuple(const std::vector<VarP> &vars, const char *what);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_VALUE_H
