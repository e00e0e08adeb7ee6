//===- Capture.h - symbolic bytecode capture into kiln IR ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Entry point of the symbolic interpreter: walks a frame's bytecode with
// abstract values (tensors become kiln IR values, Python values stay
// concrete and guarded, user functions and nn.Module.forward are inlined,
// loops over concrete iterables unrolled) and produces a kiln module, the
// guards it relies on and how to rebuild the Python result. Anything it
// does not support ends the capture with a reason and a source location.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_CAPTURE_H
#define KILN_FRONTEND_CAPTURE_CAPTURE_H

#include "Guards.h"
#include "Program.h"
#include "TensorInfo.h"
#include "capture/breaks/GraphBreak.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kiln {

/// How one node of the Python result is produced. The result is a tree
/// stored in prefix order: a Tuple/List node is followed by its children.
struct SizeExpr;

struct OutputSlot {
  /// Source: the value of source `index` read at the call's start (a side
  /// effect's value, or a plain object of the caller's that is returned).
  /// Binary appears only in side-effect values (evaluated when the effect
  /// is replayed): operator `constant` (a str: + - * ...) on its two
  /// children.
  /// Scalar: a Python number read from a tensor inside the graph: graph
  /// result `index` (0-d f64/i64/bool) converted by `.item()`.
  /// Numpy: its one child (a tensor) as `child.numpy()`; `index` 1: a
  /// NumPy scalar, `child.numpy()[()]` (interp/NumpyInterop.cpp).
  /// Object: an instance of class `cls` made in the capture, rebuilt as
  /// object.__new__(cls) with its attributes (names in `constant`, values
  /// the children) set by object.__setattr__'s generic path.
  /// SymSize: a Python int that is an expression of symbolic sizes
  /// (`x.shape[1]`, `-s`, `s // 2`), `size` evaluated per call from the
  /// inputs' sizes.
  enum class Kind {
    Graph,
    Input,
    Constant,
    Tuple,
    List,
    Dict,
    InputView,
    GraphView,
    Source,
    Binary,
    Object,
    Scalar,
    Numpy,
    SymSize
  };
  Kind kind;
  int index = 0;     ///< Graph: result number; Input: graph input number;
                     ///< Tuple/List/Dict: number of children (Dict: values);
                     ///< Source: the source
  PyRef constant;    ///< Constant: the object itself; Dict: tuple of its keys;
                     ///< InputView: tuple of (method name, args) applied to input `index`;
                     ///< GraphView: the same, applied to graph result `index`;
                     ///< Graph (when set): the steps giving the result eager's
                     ///< memory format, a new tensor per call (EagerLayouts.h);
                     ///< Binary: the operator
  bool copy = false; ///< Graph/Input: return a clone (eager made a copy);
                     ///< Constant: a list/dict/set made at capture, returned as obj.copy()
  PyRef cls;         ///< Dict: when set, the result is cls(**dict) (a ModelOutput),
                     ///< or cls(dict) with `copy` (an OrderedDict);
                     ///< Tuple: cls(tuple) (a torch.return_types structseq), or
                     ///< tuple.__new__(cls, tuple) for a Python tuple subclass
                     ///< (namedtuple); Object: the class
  /// Graph/Input with `copy`, InputView/GraphView: >= 0 when the same Python
  /// tensor was already placed at output slot `sameAs` (one clone() or view
  /// held in several places, e.g. a local and the stack at a break): that
  /// object, not a new clone or replay.
  int sameAs = -1;
  std::shared_ptr<const SizeExpr> size; ///< SymSize: the expression
  /// With `copy`: the copy is contiguous (`x.contiguous()` of a strided
  /// input), not a clone() keeping the input's strides.
  bool contiguousCopy = false;
};

/// A graph input: a tensor read from a source; the seed of the graph's
/// random ops (`kiln.random`): a 0-d int64 tensor drawn from torch's default
/// generator on every call (kiln/_random.py), with no source (-1); or, for
/// an int or float argument that dynamic=None made dynamic
/// (capture/values/DynamicNumbers.cpp), an int's carrier, an empty `(n, 0)`
/// int64 tensor made per call from the int at `source` whose dim 0 is the
/// symbol, and the number's value, a 0-d int64 or float64 tensor made per
/// call (uses of the value: `x * n`, arange bounds, `x * lr`).
struct GraphInput {
  enum class Kind { Tensor, Seed, IntCarrier, NumberValue };
  int source;
  Kind kind = Kind::Tensor;
  bool makeContiguous = false; ///< non-contiguous at capture: copied per call
  /// Dims from outermost to innermost in memory of a tensor dense in
  /// another order than row-major, passed as it is (the graph argument has
  /// its dims in this order: capture/values/InputLayouts.h); empty: the
  /// tensor's own dims (row-major, or copied when makeContiguous).
  std::vector<int64_t> memoryOrder;
  bool requiresGrad = false;
  /// A tensor of the caller's (not one kiln makes per call).
  bool isTensor() const { return kind == Kind::Tensor; }
};

/// Graph values whose eager strides their ops do not show: value → (the
/// value whose strides it has (true) or whose memory format it takes (false)).
using LayoutSources = llvm::DenseMap<mlir::Value, std::pair<mlir::Value, bool>>;

/// A graph result the runtime allocates.
struct GraphOutput {
  std::vector<int64_t> sizes; ///< -1 for a symbolic dim
  DType dtype;
  /// Per dim: the SymbolicSize it equals (-1: static). Filled by the
  /// dynamic-shape check (DynamicShapes.cpp); empty for static graphs.
  std::vector<int> symbolOf;
  /// In a graph that needs gradients: eager computes it without
  /// requires_grad (under torch.no_grad(), from inputs that need no
  /// gradient, a BatchNorm running stat); kiln._autograd marks it
  /// non-differentiable (GradFlow.cpp).
  bool noGrad = false;
};

/// An integer expression over symbolic sizes (a Python int computed from
/// `x.shape[i]` of a `?` dim: `s + 1`, `s // 4`, `2 * s`). Immutable, shared.
struct SizeExpr {
  enum class Op { Sym, Const, Add, Sub, Mul, FloorDiv, Mod };
  Op op = Op::Const;
  int64_t value = 0; ///< Sym: the symbol's index; Const: the value
  std::shared_ptr<const SizeExpr> lhs, rhs;
};
using SizeExprP = std::shared_ptr<const SizeExpr>;

/// One symbolic size of a dynamic graph: every input dim listed has this
/// size at run time (they had the same size at capture, `captured`, and the
/// graph may rely on them being equal, so the entry guards that they are);
/// the size is >= 2 (0 and 1 are specialized, as in Dynamo). A derived
/// size (`def` set, no dims) is an affine expression of earlier symbols
/// (a KV cache's `s0 + 1` after a concat, a mask of `past + n`): its value
/// per call is `def` evaluated on theirs; its captured value differs from
/// every other symbol's (SymbolicSizes.cpp).
struct SymbolicSize {
  int64_t captured = 0;
  std::vector<std::pair<int, int>> dims; ///< (graph input, dim), first one read per call
  SizeExprP def;                         ///< derived: the expression (else null)
};

/// The expression of symbol `sym` alone.
SizeExprP symExpr(int64_t sym);
/// Evaluates `e` with symbol `i` = `symbols[i]` (Python's floor // and %);
/// false on a division by zero.
bool evalSizeExpr(const SizeExpr &e, llvm::ArrayRef<int64_t> symbols, int64_t &out);
/// `e` as text (`s0 + 1`).
std::string sizeExprText(const SizeExpr &e);

/// A Python comparison on symbolic sizes that the capture decided by their
/// captured values (`if s > 1:`, `s == t`): the entry requires
/// `lhs <cmp> rhs` to be `expected` on every call, as Dynamo's shape guards.
struct SizeGuard {
  SizeExprP lhs, rhs;
  std::string cmp; ///< one of < <= == != > >=
  bool expected = true;
};

/// How a capture treats input sizes (kiln.compile's `dynamic`).
struct DynamicPolicy {
  enum class Mode { Static, All, Auto };
  Mode mode = Mode::Static;
  /// Dims made symbolic after a size change (dynamic=None), as
  /// "<source description>#<dim>", e.g. "L['x']#0", and int and float
  /// arguments made graph values after a value change, as "<source
  /// description>", e.g. "L['n']" (capture/values/DynamicNumbers.cpp).
  std::set<std::string> autoDynamic;
  /// Capture with every size static (the fallback when a symbolic one
  /// cannot be kept); mark_dynamic is ignored too.
  bool forceStatic = false;
  /// Static types, but the dims that the dynamic capture made symbolic are
  /// still recorded in Capture::symbols and read as SymInt values: the
  /// static capture that checks a dynamic one (hook/CompileDriver.cpp keepSymbolic) then
  /// takes the same code paths (size arithmetic, factories of a symbolic
  /// size) and must build the same graph.
  bool shadow = false;
  /// Captured sizes that stay static (they equal a static size the graph
  /// uses, e.g. a weight's, so the graph may assume them equal).
  std::set<int64_t> staticSizes;
  /// Names of the root frame's locals (to describe sources).
  std::vector<std::string> localNames;
};

/// The interpreter state where a capture stopped at a graph break (see
/// kiln/_resume.py): the graph's Python result is the tuple (stack items,
/// locals, cells), which the frame hook hands to the break's stub.
struct BreakState {
  bool reached = false; ///< the capture got to the stop offset
  /// Live views of computed tensors are rebuilt after the break from their
  /// root (false when the entry recomputes for autograd).
  bool viewsReplay = true;
  std::string layout;              ///< per stack slot: 'n' a NULL, 'i' the next item
  std::vector<std::string> locals; ///< fast locals passed after the stack items
  std::vector<std::string> cells;  ///< cells (by content) passed after the locals
  /// (item, source): items read from the frame on every call (the caller's
  /// own objects, e.g. a list passed in, keep their identity).
  std::vector<std::pair<int, int>> sourced;
  /// Items that are lists/dicts/sets made at capture time: copied per call.
  std::vector<int> copied;
  /// Items whose subtree holds graph results (the autograd recompute
  /// returns just these).
  std::vector<int> needed;
};

/// One step of a graph split at fallback calls (Partition.cpp): a segment
/// of the captured function as its own module, or fallback call `fallback`.
struct CaptureStep {
  int fallback = -1;                         ///< index into Capture::fallbacks; -1: a segment
  mlir::OwningOpRef<mlir::ModuleOp> module;  ///< segment: func.func @forward
  std::vector<int> in, out;                  ///< value slots (see Program.h)
  std::vector<std::vector<int64_t>> inSizes; ///< segment: per input
  std::vector<GraphOutput> results;          ///< segment: per result
};

/// A mutation of Python state that existed before the frame (an attribute,
/// a global, a dict/list item, list.append, an in-place op on a tensor
/// input ...), recorded during capture and replayed in order after the
/// graph runs (SideEffects.cpp, ops/InPlace.cpp).
struct SideEffect {
  /// CopyInto: `target.copy_(value)`, then target's version counter set to
  /// its value before plus `versionBumps` (eager bumps it once per in-place
  /// op). Call: `target(value)` (e.g. torch._C._set_grad_enabled).
  enum class Kind {
    SetAttr,
    SetItem,
    DelItem,
    ListAppend,
    ListExtend,
    ListInsert,
    ListPop,
    CopyInto,
    Call
  };
  Kind kind;
  int target = -1; ///< source of the mutated object (resolved per call)
  PyRef key;       ///< SetAttr: the name; SetItem/DelItem: the key; ListInsert/ListPop: the index
  int rootOffset = -1;  ///< root instruction that made it
  std::string what;     ///< for messages, e.g. "STORE_ATTR calls"
  int versionBumps = 0; ///< CopyInto: in-place ops eager ran on the tensor
};

/// Everything a successful capture produces.
struct Capture {
  /// In: stop before the root instruction at this bytecode offset and
  /// return the interpreter state (a graph break's prefix); -1: run to the end.
  int stopOffset = -1;
  /// Out (with stopOffset): the state at the stop.
  BreakState state;
  SourceTable sources;
  std::vector<Guard> guards;
  std::vector<GraphInput> inputs;
  std::vector<GraphOutput> results;
  std::vector<OutputSlot> outputs; ///< the result tree, root first
  /// In: `.item()`, `.tolist()`, int/float/bool of a tensor break instead
  /// of becoming Scalars (the retry after a break that could not resume:
  /// one at the read itself may). Out: whether the capture made Scalars.
  bool scalarsAsBreaks = false;
  bool madeScalars = false;
  /// Whether grad mode was on at capture (guarded).
  bool gradMode = false;
  /// torch.get_default_dtype() at capture (guarded like grad mode).
  PyObject *defaultDtype = nullptr;
  /// In: which input dims may be symbolic (`?` in the IR).
  DynamicPolicy dynamic;
  /// Out: the symbolic sizes (empty for a static graph).
  std::vector<SymbolicSize> symbols;
  /// Out: comparisons on symbolic sizes the graph depends on.
  std::vector<SizeGuard> sizeGuards;
  /// Out: some code read a symbolic size as a Python value (x.shape[0],
  /// len(x)); a failed capture is then retried with static sizes.
  bool readSymbolicSize = false;
  /// Out: a float argument was read as a graph value (DynamicNumbers.cpp);
  /// a failed capture or compile is then retried with it constant.
  bool readDynamicFloat = false;
  /// Out: the number arguments read as graph values ("L['n']").
  std::vector<std::string> dynamicNumbers;
  /// Out: the side-effect log in program order, and the value each one
  /// stores as a result tree (prefix order, one subtree per effect).
  std::vector<SideEffect> effects;
  std::vector<OutputSlot> effectValues;
  /// Number of kiln ops in the graph.
  int numOps = 0;
  /// Torch calls kiln has no lowering for, run through torch inside the
  /// graph (per-op fallback, Fallback.cpp); each is a `func.call
  /// @kiln_fallback_<i>` in `module` until Partition.cpp splits it into
  /// `steps` (empty when there is no fallback: one compiled function).
  std::vector<FallbackCall> fallbacks;
  std::vector<CaptureStep> steps;
  /// Graph result that is a 0-d i64, non-zero (an IndexErrorCode) when an
  /// index that data gave a gather/embedding was out of range: the runtime
  /// raises eager's error (ops/IndexChecks.cpp); -1 when the graph has none.
  int indexCheck = -1;
  int numValues = 0;            ///< value slots of the program
  std::vector<int> resultSlots; ///< graph results as value slots
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Why a capture stopped: the graph break's record (capture/breaks/GraphBreak.h).
struct CaptureFailure {
  /// What kind of construct stopped it (BreakCategory::Other: unclassified,
  /// or a failure after the capture, e.g. in code generation).
  BreakCategory category = BreakCategory::Other;
  /// Why, including the text of the Python exception behind it, if any.
  std::string reason;
  std::string location; ///< "file:line" of the unsupported construct
  std::string hint;     ///< what the user can do ("" when none)
  /// Offset of the root frame's instruction that was running (the call
  /// that was being inlined, for a failure inside a callee); -1 when the
  /// failure was not inside an instruction (e.g. the result).
  int rootOffset = -1;
  /// The capture read Python numbers from tensors (Capture::madeScalars).
  bool madeScalars = false;
};

/// Whether the entry's backward recomputes the function eagerly
/// (hook/Recompute.cpp): grad mode on and an input requiring grad. Its
/// graph results are paired with the tensors at the same places in the
/// eager result, so every one must be a tensor the caller sees (no hidden
/// roots of views, which are then returned as copies).
bool recomputesForAutograd(const Capture &out);

/// Captures the frame of `code` (called as `func`, locals in `frame`).
/// Returns false and fills `failure` when the frame cannot be captured; the
/// caller then runs it eagerly. A Python error is never left set.
bool captureFrame(mlir::MLIRContext &ctx, PyCodeObject *code, PyObject *func,
                  const FrameView &frame, Capture &out, CaptureFailure &failure);

/// Splits `out.module` at its fallback calls into `out.steps` (after the
/// results are known); throws nothing, returns false with `error` set.
bool partitionProgram(Capture &out, std::string &error);

/// Eager's error for an out-of-range data index, as the code the index
/// check's flag holds (Capture::indexCheck: the largest code among the
/// gathers out of range). A kiln.gather carries its code as the i64
/// attribute kIndexErrorAttr; without it, IndexError (indexing,
/// index_select, embedding, loss targets).
enum IndexErrorCode : int64_t {
  kIndexErrorIndex = 1,  ///< IndexError "index out of range in self"
  kIndexErrorGather = 2, ///< torch.gather: RuntimeError "index ... is out of bounds"
  kIndexErrorOneHot = 3, ///< F.one_hot: RuntimeError "Class values must be ..."
};
inline constexpr const char *kIndexErrorAttr = "kiln.index_error";

class Interpreter;
/// Appends to `entry` (the graph's block, before its return) the 0-d i64
/// that flags an out-of-range data index of its gathers/embeddings; null
/// when none needs a check (ops/IndexChecks.cpp, Capture::indexCheck).
mlir::Value indexRangeCheck(Interpreter &I, mlir::Block &entry);

/// Names of the locals of `code` (for guard descriptions).
std::vector<std::string> localNames(PyCodeObject *code);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_CAPTURE_H
