//===- EagerLayouts.cpp - eager's strides of the tensors a graph returns --===//
// SPDX-License-Identifier: Apache-2.0
//
// See EagerLayouts.h. The model follows ATen's rules, op by op, over the
// graph's static shapes (strides in elements):
//   - graph inputs: their guarded strides (the Tensor guard);
//   - elementwise ops (unary, broadcasting binary, select, cast):
//     TensorIterator's — its fast set-up (all operands contiguous, all
//     channels-last, or all dense with equal strides) and otherwise its
//     dim order, decided per pair of dims by the first operand whose
//     strides there are both non-zero and differ (broadcast dims have
//     stride 0), the output dense in that order;
//   - conv2d: channels-last when the input's or the weight's strides
//     suggest it (oneDNN's and the slow path's rule on CPU), pooling when
//     the input's do, concat when every operand's do;
//   - permute, slice, broadcast_to: the view's strides; reshape: a view's
//     strides where ATen's computeStride finds them, else a contiguous copy;
//   - anything else (matmul, reductions, softmax, layer_norm, gather ...):
//     contiguous, as eager allocates them.
// What the model does not know (an op it does not list) is contiguous, the
// layout kiln returned before, never a wrong value: the rewrite only
// changes strides, the values are the graph's.
//===----------------------------------------------------------------------===//
#include "capture/values/EagerLayouts.h"

#include "Export.h"
#include "capture/values/Value.h"

#include "ir/KilnBuilders.h"
#include "ir/KilnOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace kiln {
namespace {

using Shape = llvm::ArrayRef<int64_t>;
using Strides = llvm::SmallVector<int64_t, 6>;

Strides contiguousStrides(Shape shape) {
  Strides s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return s;
}

/// Dense strides with the dims laid out in `innerFirst` order (the first
/// dim has stride 1), as TensorIterator and empty(memory_format=) compute them.
Strides denseInOrder(Shape shape, llvm::ArrayRef<int64_t> innerFirst) {
  Strides s(shape.size(), 1);
  int64_t next = 1;
  for (int64_t d : innerFirst) {
    s[d] = next;
    next *= std::max<int64_t>(shape[d], 1);
  }
  return s;
}

/// The channels-last dim order (innermost first) of a 4-D or 5-D shape.
llvm::SmallVector<int64_t, 5> channelsLastOrder(size_t rank) {
  if (rank == 4)
    return {1, 3, 2, 0};
  return {1, 4, 3, 2, 0};
}

/// `t.is_contiguous(memory_format=fmt)` (size-1 dims' strides do not count),
/// fmt given by its dim order, innermost first.
bool denseIn(Shape shape, const Strides &strides, llvm::ArrayRef<int64_t> innerFirst) {
  int64_t expected = 1;
  for (int64_t d : innerFirst) {
    if (shape[d] == 1)
      continue;
    if (strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

bool isContiguous(Shape shape, const Strides &strides) {
  llvm::SmallVector<int64_t, 6> order(shape.size());
  std::iota(order.rbegin(), order.rend(), 0);
  return denseIn(shape, strides, order);
}

bool isChannelsLastContiguous(Shape shape, const Strides &strides) {
  return (shape.size() == 4 || shape.size() == 5) &&
         denseIn(shape, strides, channelsLastOrder(shape.size()));
}

/// `t.is_non_overlapping_and_dense()`.
bool isNonOverlappingAndDense(Shape shape, const Strides &strides) {
  llvm::SmallVector<int64_t, 6> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (shape[a] < 2 || shape[b] < 2)
      return shape[a] < 2 && shape[b] >= 2 ? false : shape[b] < 2 && shape[a] >= 2;
    return strides[a] < strides[b];
  });
  return denseIn(shape, strides, order);
}

/// ATen's is_channels_last_strides_2d/3d: whether `t.suggest_memory_format()`
/// is channels-last (ambiguous N111-like strides stay contiguous).
bool suggestsChannelsLast(Shape shape, const Strides &strides) {
  if (shape.size() != 4 && shape.size() != 5)
    return false;
  if (strides[1] == 0)
    return false;
  int64_t min = 0;
  for (int64_t d : channelsLastOrder(shape.size())) {
    if (shape[d] == 0 || strides[d] < min)
      return false;
    if (d == 0 && min == strides[1])
      return false;
    min = strides[d];
    if (shape[d] > 1)
      min *= shape[d];
  }
  return true;
}

Strides channelsLastStrides(Shape shape) {
  return denseInOrder(shape, channelsLastOrder(shape.size()));
}

/// An operand's strides broadcast to `out` (0 for a dim it broadcasts).
Strides broadcastStrides(Shape out, Shape shape, const Strides &strides) {
  Strides s(out.size(), 0);
  size_t offset = out.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    s[offset + i] = shape[i] == 1 && out[offset + i] != 1 ? 0 : strides[i];
  return s;
}

struct Operand {
  Shape shape;
  Strides strides;
};

/// TensorIterator's output strides for operands `ops` (in argument order).
Strides elementwiseStrides(Shape out, llvm::ArrayRef<Operand> ops) {
  size_t n = out.size();
  if (n < 2)
    return contiguousStrides(out);
  bool sameShape =
      std::all_of(ops.begin(), ops.end(), [&](const Operand &o) { return o.shape == out; });
  if (sameShape && !ops.empty()) { // compute_fast_setup_type
    auto all = [&](auto pred) {
      return std::all_of(ops.begin(), ops.end(), [&](const Operand &o) { return pred(o); });
    };
    if (all([](const Operand &o) { return isContiguous(o.shape, o.strides); }))
      return contiguousStrides(out);
    if (all([](const Operand &o) { return isChannelsLastContiguous(o.shape, o.strides); }))
      return channelsLastStrides(out);
    if (all([&](const Operand &o) {
          return isNonOverlappingAndDense(o.shape, o.strides) && o.strides == ops[0].strides;
        }))
      return ops[0].strides;
  }
  std::vector<Strides> bs;
  for (const Operand &o : ops)
    bs.push_back(broadcastStrides(out, o.shape, o.strides));
  auto shouldSwap = [&](int64_t d0, int64_t d1) {
    for (const Strides &s : bs) {
      if (s[d0] == 0 || s[d1] == 0)
        continue;
      if (s[d0] < s[d1])
        return -1;
      if (s[d0] > s[d1])
        return 1;
      if (out[d0] > out[d1])
        return 1;
    }
    return 0;
  };
  // reorder_dimensions: an insertion sort, innermost dim first.
  llvm::SmallVector<int64_t, 6> perm(n);
  std::iota(perm.rbegin(), perm.rend(), 0);
  for (size_t i = 1; i < n; ++i) {
    int64_t dim1 = (int64_t)i;
    for (int64_t dim0 = (int64_t)i - 1; dim0 >= 0; --dim0) {
      int c = shouldSwap(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return denseInOrder(out, perm);
}

/// ATen's computeStride: the strides of `newShape` viewing a tensor of
/// `oldShape`/`oldStrides`, or none where a view cannot (reshape copies).
std::optional<Strides> viewStrides(Shape oldShape, const Strides &oldStrides, Shape newShape) {
  if (oldShape.empty())
    return Strides(newShape.size(), 1);
  int64_t numel = 1;
  for (int64_t s : oldShape)
    numel *= s;
  if (numel == 0)
    return std::nullopt;
  Strides out(newShape.size(), 1);
  int64_t viewD = (int64_t)newShape.size() - 1;
  int64_t chunkBase = oldStrides.back(), tensorNumel = 1, viewNumel = 1;
  for (int64_t d = (int64_t)oldShape.size() - 1; d >= 0; --d) {
    tensorNumel *= oldShape[d];
    if (d == 0 || (oldShape[d - 1] != 1 && oldStrides[d - 1] != tensorNumel * chunkBase)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
        out[viewD] = viewNumel * chunkBase;
        viewNumel *= newShape[viewD];
        --viewD;
      }
      if (viewNumel != tensorNumel)
        return std::nullopt;
      if (d > 0) {
        chunkBase = oldStrides[d - 1];
        tensorNumel = viewNumel = 1;
      }
    }
  }
  if (viewD != -1)
    return std::nullopt;
  return out;
}

bool isElementwise(mlir::Operation *op) {
  using namespace mlir::kiln;
  return llvm::isa<CastOp, NegOp, AbsOp, ReluOp, ExpOp, LogOp, TanhOp, SigmoidOp, GeluOp, SiluOp,
                   SqrtOp, RsqrtOp, ErfOp, SinOp, CosOp, TanOp, AtanOp, FloorOp, CeilOp, RoundOp,
                   TruncOp, Log1pOp, Expm1Op, Log2Op, AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp,
                   MinimumOp, FmodOp, FloorDivOp, EqOp, NeOp, LtOp, LeOp, GtOp, GeOp, SelectOp>(op);
}

/// Eager's strides of the graph's values, computed once in program order.
class StrideModel {
public:
  StrideModel(const Capture &out, const LayoutSources &sources) : out_(out), sources_(sources) {}

  void run(mlir::Block &entry) {
    for (mlir::Operation &op : entry)
      for (mlir::Value r : op.getResults())
        if (auto s = compute(&op, r))
          known_[r] = *s;
  }

  /// The strides of `v`, or none (a dynamic or unranked shape).
  std::optional<Strides> of(mlir::Value v) const {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return std::nullopt;
    if (auto it = known_.find(v); it != known_.end())
      return it->second;
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v))
      if (auto s = inputStrides(arg, type.getShape()))
        return s;
    return contiguousStrides(type.getShape());
  }

private:
  /// The guarded strides of graph input `arg`.
  std::optional<Strides> inputStrides(mlir::BlockArgument arg, Shape shape) const {
    unsigned i = arg.getArgNumber();
    if (i >= out_.inputs.size() || !out_.inputs[i].isTensor())
      return std::nullopt;
    if (!out_.inputs[i].memoryOrder.empty()) // held in memory order (InputLayouts.h)
      return contiguousStrides(shape);
    for (const Guard &g : out_.guards)
      if (g.kind == Guard::Kind::Tensor && g.source == out_.inputs[i].source &&
          g.strides.size() == shape.size() && Shape(g.sizes) == shape)
        return Strides(g.strides.begin(), g.strides.end());
    return std::nullopt;
  }

  std::optional<Strides> compute(mlir::Operation *op, mlir::Value r) const {
    using namespace mlir::kiln;
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(r.getType());
    if (!type || !type.hasStaticShape() || op->getNumResults() != 1)
      return std::nullopt;
    Shape shape = type.getShape();
    auto operand = [&](unsigned i) { return of(op->getOperand(i)); };
    auto shapeOf = [&](mlir::Value v) {
      return llvm::cast<mlir::ShapedType>(v.getType()).getShape();
    };
    if (auto it = sources_.find(r); it != sources_.end()) {
      auto [from, exact] = it->second;
      auto s = of(from);
      if (exact) // an in-place update keeps the tensor's strides
        return s && shapeOf(from) == shape ? s : std::nullopt;
      bool cl =
          s && shapeOf(from).size() == shape.size() && suggestsChannelsLast(shapeOf(from), *s);
      return cl ? channelsLastStrides(shape) : contiguousStrides(shape);
    }
    if (op->hasAttr(kContiguousAttr))
      return contiguousStrides(shape);
    if (isElementwise(op)) {
      std::vector<Operand> ops;
      for (mlir::Value v : op->getOperands()) {
        auto s = of(v);
        if (!s)
          return std::nullopt;
        ops.push_back({shapeOf(v), *s});
      }
      return elementwiseStrides(shape, ops);
    }
    if (llvm::isa<Conv2dOp>(op)) {
      auto in = operand(0), w = operand(1);
      if (!in || !w)
        return std::nullopt;
      bool cl = suggestsChannelsLast(shapeOf(op->getOperand(0)), *in) ||
                suggestsChannelsLast(shapeOf(op->getOperand(1)), *w);
      return cl ? channelsLastStrides(shape) : contiguousStrides(shape);
    }
    if (llvm::isa<MaxPool2dOp, AvgPool2dOp>(op)) {
      auto in = operand(0);
      if (!in)
        return std::nullopt;
      return suggestsChannelsLast(shapeOf(op->getOperand(0)), *in) ? channelsLastStrides(shape)
                                                                   : contiguousStrides(shape);
    }
    if (llvm::isa<ConcatOp>(op)) {
      bool cl = op->getNumOperands() > 0;
      for (mlir::Value v : op->getOperands()) {
        auto s = of(v);
        cl = cl && s && suggestsChannelsLast(shapeOf(v), *s);
      }
      return cl ? channelsLastStrides(shape) : contiguousStrides(shape);
    }
    if (auto p = llvm::dyn_cast<PermuteOp>(op)) {
      auto in = operand(0);
      if (!in)
        return std::nullopt;
      Strides s;
      for (int64_t d : p.getDims())
        s.push_back((*in)[d]);
      return s;
    }
    if (auto sl = llvm::dyn_cast<SliceOp>(op)) {
      auto in = operand(0);
      if (!in || in->size() != shape.size())
        return std::nullopt;
      Strides s = *in;
      for (size_t d = 0; d < s.size() && d < sl.getStep().size(); ++d)
        s[d] *= std::max<int64_t>(sl.getStep()[d], 1);
      return s;
    }
    if (llvm::isa<BroadcastToOp>(op)) {
      auto in = operand(0);
      if (!in)
        return std::nullopt;
      return broadcastStrides(shape, shapeOf(op->getOperand(0)), *in);
    }
    if (llvm::isa<ReshapeOp>(op)) {
      auto in = operand(0);
      if (!in)
        return std::nullopt;
      if (auto s = viewStrides(shapeOf(op->getOperand(0)), *in, shape))
        return s;
      return contiguousStrides(shape);
    }
    return std::nullopt; // contiguous (StrideModel::of)
  }

  const Capture &out_;
  const LayoutSources &sources_;
  llvm::DenseMap<mlir::Value, Strides> known_;
};

/// The dim order (outermost first) in which `strides` lay `shape` out
/// densely, when it is not row-major; empty otherwise (row-major, not
/// dense, or a rank below 2).
llvm::SmallVector<int64_t, 6> permutedDenseOrder(Shape shape, const Strides &strides) {
  if (shape.size() < 2 || strides == contiguousStrides(shape))
    return {};
  llvm::SmallVector<int64_t, 6> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  llvm::SmallVector<int64_t, 6> innerFirst(order.rbegin(), order.rend());
  if (denseInOrder(shape, innerFirst) != strides)
    return {};
  return order;
}

PyRef permuteStep(llvm::ArrayRef<int64_t> dims) {
  PyRef t = PyRef::steal(PyTuple_New(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i)
    PyTuple_SET_ITEM(t.get(), i, PyLong_FromLongLong(dims[i]));
  PyRef args = PyRef::steal(PyTuple_Pack(1, t.get()));
  PyRef name = PyRef::steal(PyUnicode_FromString("permute"));
  return PyRef::steal(PyTuple_Pack(2, name.get(), args.get()));
}

/// `steps` (a tuple of view steps) with `first` (and `last`, when set) added.
PyRef withSteps(PyObject *first, PyObject *steps, PyObject *last = nullptr) {
  Py_ssize_t n = steps ? PyTuple_GET_SIZE(steps) : 0;
  PyRef t = PyRef::steal(PyTuple_New(n + 1 + (last ? 1 : 0)));
  Py_INCREF(first);
  PyTuple_SET_ITEM(t.get(), 0, first);
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_INCREF(PyTuple_GET_ITEM(steps, i));
    PyTuple_SET_ITEM(t.get(), i + 1, PyTuple_GET_ITEM(steps, i));
  }
  if (last) {
    Py_INCREF(last);
    PyTuple_SET_ITEM(t.get(), n + 1, last);
  }
  return t;
}

/// The steps making a row-major result channels-last, as eager's: a
/// `contiguous(memory_format=)` copy, or a `clone(memory_format=)` where the
/// result must be a new tensor in any case (eager's clone()).
PyRef channelsLastSteps(bool copy) {
  PyObject *format = PyObject_GetAttrString(torchModule(), "channels_last");
  PyRef step = PyRef::steal(Py_BuildValue("(s()N)", copy ? "clone" : "contiguous",
                                          Py_BuildValue("{s:N}", "memory_format", format)));
  return PyRef::steal(PyTuple_Pack(1, step.get()));
}

} // namespace

void matchEagerLayouts(Capture &out, mlir::Block &entry, std::vector<mlir::Value> &results,
                       const LayoutSources &sources) {
  // An artifact's outputs are the graph's row-major results; a graph with
  // symbolic sizes (and its shadow static capture, which must build the
  // same graph) has no static strides to model.
  if (exportRecording() || !out.symbols.empty())
    return;
  // Results the tree places as tensors, and those something else reads as
  // they are (a side effect's value, a write-back, a Python number).
  std::set<int> placed, pinned;
  for (const OutputSlot &s : out.outputs) {
    if (s.kind == OutputSlot::Kind::Graph || s.kind == OutputSlot::Kind::GraphView)
      placed.insert(s.index);
    else if (s.kind == OutputSlot::Kind::Scalar)
      pinned.insert(s.index);
  }
  for (const OutputSlot &s : out.effectValues)
    if (s.kind == OutputSlot::Kind::Graph || s.kind == OutputSlot::Kind::GraphView ||
        s.kind == OutputSlot::Kind::Scalar)
      pinned.insert(s.index);
  bool candidate = false;
  for (int i : placed) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(results[i].getType());
    candidate |= type && type.hasStaticShape() && type.getRank() >= 2;
  }
  if (!candidate)
    return;
  StrideModel model(out, sources);
  model.run(entry);
  // A graph that needs gradients keeps its results (kiln._autograd lines
  // them up with the eager recompute's tensors by position and shape): a
  // channels-last one is converted per call instead (a copy).
  bool autograd = recomputesForAutograd(out);
  mlir::OpBuilder b(entry.getParent()->getContext());
  b.setInsertionPointToEnd(&entry);
  std::map<int, std::pair<int, PyRef>> moved; // result → (its result now, the steps to eager's)
  for (int i : placed) {
    mlir::Value v = results[i];
    auto strides = model.of(v);
    if (!strides)
      continue;
    Shape shape = llvm::cast<mlir::ShapedType>(v.getType()).getShape();
    auto order = permutedDenseOrder(shape, *strides);
    if (order.empty())
      continue;
    if (autograd) {
      auto cl = channelsLastOrder(shape.size());
      if (shape.size() == 4 && llvm::equal(llvm::reverse(cl), llvm::ArrayRef<int64_t>(order)))
        moved[i] = {i, PyRef()};
      continue;
    }
    llvm::SmallVector<int64_t, 6> inverse(order.size());
    for (size_t d = 0; d < order.size(); ++d)
      inverse[order[d]] = (int64_t)d;
    mlir::Value physical = mlir::kiln::buildPermute(b, v.getLoc(), v, order);
    int index = i;
    if (pinned.count(i)) {
      index = (int)results.size();
      results.push_back(physical);
    } else {
      results[i] = physical;
    }
    moved[i] = {index, permuteStep(inverse)};
  }
  std::map<int, int> firstPlaced; // result → the slot that returns it uncopied
  PyRef cloneStep = PyRef::steal(Py_BuildValue("(s())", "clone"));
  for (size_t pos = 0; pos < out.outputs.size(); ++pos) {
    OutputSlot &s = out.outputs[pos];
    auto it = moved.find(s.index);
    if ((s.kind != OutputSlot::Kind::Graph && s.kind != OutputSlot::Kind::GraphView) ||
        it == moved.end())
      continue;
    auto &[index, step] = it->second;
    if (s.kind == OutputSlot::Kind::GraphView) {
      s.constant = withSteps(step.get(), s.constant.get());
      s.index = index;
      continue;
    }
    // One result returned twice is one object (`return y, y`).
    if (!s.copy && s.sameAs < 0) {
      auto [first, isNew] = firstPlaced.try_emplace(s.index, (int)pos);
      if (!isNew)
        s.sameAs = first->second;
    }
    if (!step) { // a graph with gradients: Graph slot, converted per call
      s.constant = channelsLastSteps(s.copy);
      s.copy = false;
      continue;
    }
    // A clone() of it keeps eager's strides (clone preserves a dense layout).
    s.constant =
        s.copy ? withSteps(step.get(), nullptr, cloneStep.get()) : withSteps(step.get(), nullptr);
    s.kind = OutputSlot::Kind::GraphView;
    s.copy = false;
    s.index = index;
  }
}

} // namespace kiln
