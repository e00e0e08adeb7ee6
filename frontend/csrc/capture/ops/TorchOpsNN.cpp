//===- TorchOpsNN.cpp - convolution, pooling, normalization, attention -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of torch.nn.functional's layers: conv1d/conv2d
// (kiln.conv2d, 'same'/'valid'/int/tuple padding, dilation, groups, bias),
// max/avg pooling 1-D/2-D (kiln.max_pool2d / avg_pool2d), adaptive
// average/max pooling, group_norm, instance_norm, rms_norm, log_softmax,
// softmin, scaled_dot_product_attention (causal, bool and float masks),
// normalize, cosine_similarity, pixel_(un)shuffle, nearest interpolation
// and eval-mode dropout variants. 1-D and unbatched forms are the 2-D ops on
// reshaped operands. Statistics of f16/bf16 compute in f32, as torch does.
// Losses are in TorchOpsLoss.cpp.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "ir/ShapeUtils.h"

#include <cmath>
#include <limits>

namespace kiln {

using namespace mlir::kiln;

namespace {

DType opmath(DType d) { return isNarrow(d) ? DType::F32 : d; }

std::vector<int64_t> shapeOf(Value v) {
  if (!ttype(v).hasStaticShape())
    throw Unsupported("a tensor with dynamic dims");
  auto s = ttype(v).getShape();
  return {s.begin(), s.end()};
}

/// The shape of a batched [N, C, *spatial] conv or pool operand: static but
/// for a symbolic batch N (kDynamic in the result).
std::vector<int64_t> batchShapeOf(Value v) {
  auto s = ttype(v).getShape();
  for (size_t d = 1; d < s.size(); ++d)
    if (mlir::ShapedType::isDynamic(s[d]))
      throw Unsupported("a tensor with dynamic dims other than the batch");
  return {s.begin(), s.end()};
}

Value floatTensor(const VarP &v, const std::string &op) {
  Value t = tensorArg(v, op);
  if (!isFloatingDType(dtypeOfValue(t)))
    throw Unsupported(op + " of an integer tensor (eager raises)");
  return t;
}

/// An int-or-tuple argument expanded to `n` entries (`dflt` when absent).
std::vector<int64_t> nInts(const Args &a, const char *name, size_t n, std::vector<int64_t> dflt) {
  if (a.isNone(name))
    return dflt;
  std::vector<int64_t> v = asInts(a.get(name), name);
  if (v.size() == 1 && n > 1)
    v.assign(n, v[0]);
  if (v.size() != n)
    throw Unsupported(std::string(name) + " must have " + std::to_string(n) + " entries");
  return v;
}

mlir::NamedAttribute arr(Emit &e, const char *name, llvm::ArrayRef<int64_t> v) {
  return e.b.getNamedAttr(name, e.b.getDenseI64ArrayAttr(v));
}

/// Brings a [C, *spatial] (unbatched) or [N, C, *spatial] input to 4-D
/// [N, C, H, W] for `spatialDims` (1 or 2) spatial dims; `restore` gets the
/// shape the result goes back to (with the op's output sizes filled later).
Value to4d(Emit &e, Value v, int spatialDims, bool &unbatched, const std::string &op) {
  int64_t rank = ttype(v).getRank();
  if (rank != spatialDims + 1 && rank != spatialDims + 2)
    throw Unsupported(op + " expects a " + std::to_string(spatialDims + 1) + "-D or " +
                      std::to_string(spatialDims + 2) + "-D input (eager raises)");
  unbatched = rank == spatialDims + 1;
  auto s = unbatched ? shapeOf(v) : batchShapeOf(v); // a symbolic batch N only
  if (unbatched)
    s.insert(s.begin(), 1);
  if (spatialDims == 1)
    s.insert(s.end() - 1, 1);
  return e.reshape(v, s);
}

/// The inverse of to4d for a [N, C, OH, OW] result.
Value from4d(Emit &e, Value r, int spatialDims, bool unbatched) {
  auto s = batchShapeOf(r);
  if (spatialDims == 1)
    s.erase(s.begin() + 2);
  if (unbatched)
    s.erase(s.begin());
  return e.reshape(r, s);
}

/// conv1d/conv2d (`SD` spatial dims) as one kiln.conv2d.
template <int SD> VarP conv(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  const int sd = SD;
  Value x = floatTensor(a.get("input"), op), w = floatTensor(a.get("weight"), op);
  if (dtypeOfValue(x) != dtypeOfValue(w))
    throw Unsupported(op + ": input and weight dtypes differ (eager raises)");
  if ((int64_t)shapeOf(w).size() != sd + 2)
    throw Unsupported(op + ": weight must be " + std::to_string(sd + 2) + "-D (eager raises)");
  bool unbatched;
  Value x4 = to4d(e, x, sd, unbatched, op);
  auto ws = shapeOf(w);
  if (sd == 1)
    ws.insert(ws.end() - 1, 1);
  Value w4 = e.reshape(w, ws);
  std::vector<int64_t> stride = nInts(a, "stride", sd, std::vector<int64_t>(sd, 1));
  std::vector<int64_t> dilation = nInts(a, "dilation", sd, std::vector<int64_t>(sd, 1));
  if (sd == 1) {
    stride.insert(stride.begin(), 1);
    dilation.insert(dilation.begin(), 1);
  }
  std::vector<int64_t> padding4;
  VarP p = a.get("padding");
  PyObject *po = p && p->isConst() ? p->obj.get() : nullptr;
  if (po && PyUnicode_Check(po)) {
    std::string mode = pyText(po);
    if (mode == "valid")
      padding4 = {0, 0, 0, 0};
    else if (mode == "same") {
      if (stride[0] != 1 || stride[1] != 1)
        throw Unsupported("padding='same' with stride > 1 (eager raises)");
      for (int i = 0; i < 2; ++i) {
        int64_t total = dilation[i] * (ws[2 + i] - 1);
        padding4.push_back(total / 2);
        padding4.push_back(total - total / 2);
      }
    } else
      throw Unsupported("padding='" + mode + "' (eager raises)");
  } else {
    std::vector<int64_t> pads = nInts(a, "padding", sd, std::vector<int64_t>(sd, 0));
    if (sd == 1)
      pads.insert(pads.begin(), 0);
    padding4 = {pads[0], pads[0], pads[1], pads[1]};
  }
  int64_t groups = intArg(a, "groups", 1);
  auto attrs = {arr(e, "stride", stride), arr(e, "padding", padding4), arr(e, "dilation", dilation),
                e.b.getNamedAttr("groups", e.b.getI64IntegerAttr(groups))};
  Value r = e.checked<Conv2dOp>({x4, w4}, attrs, op);
  if (!a.isNone("bias")) {
    Value b = tensorArg(a.get("bias"), op);
    if (dtypeOfValue(b) != dtypeOfValue(x) || shapeOf(b) != std::vector<int64_t>{ws[0]})
      throw Unsupported(op + ": bias shape or dtype mismatch (eager raises)");
    r = e.bin<AddOp>(r, e.reshape(b, {ws[0], 1, 1}));
  }
  return T(from4d(e, r, sd, unbatched));
}

/// max_pool and avg_pool (`Max`) over `SD` spatial dims.
template <int SD, bool Max> VarP pool(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  const int sd = SD;
  const bool isMax = Max;
  Value x = floatTensor(a.get("input"), op);
  if (boolArg(a, "return_indices", false))
    throw Unsupported(op + " with return_indices is not supported yet");
  bool unbatched;
  Value x4 = to4d(e, x, sd, unbatched, op);
  auto lift = [&](std::vector<int64_t> v, int64_t fill) {
    if (sd == 1)
      v.insert(v.begin(), fill);
    return v;
  };
  std::vector<int64_t> kernel = lift(nInts(a, "kernel_size", sd, {}), 1);
  std::vector<int64_t> stride = a.isNone("stride") || asInts(a.get("stride"), "stride").empty()
                                    ? kernel
                                    : lift(nInts(a, "stride", sd, {}), 1);
  std::vector<int64_t> padding = lift(nInts(a, "padding", sd, std::vector<int64_t>(sd, 0)), 0);
  bool ceil = boolArg(a, "ceil_mode", false);
  std::vector<mlir::NamedAttribute> attrs = {arr(e, "kernel", kernel), arr(e, "stride", stride),
                                             arr(e, "padding", padding),
                                             e.b.getNamedAttr("ceil_mode", e.b.getBoolAttr(ceil))};
  Value r;
  if (isMax) {
    attrs.push_back(
        arr(e, "dilation", lift(nInts(a, "dilation", sd, std::vector<int64_t>(sd, 1)), 1)));
    r = e.checked<MaxPool2dOp>({x4}, attrs, op);
  } else {
    attrs.push_back(e.b.getNamedAttr("count_include_pad",
                                     e.b.getBoolAttr(boolArg(a, "count_include_pad", true))));
    int64_t div = intArg(a, "divisor_override", 0);
    if (!a.isNone("divisor_override") && div <= 0)
      throw Unsupported("divisor_override must be positive (eager raises)");
    attrs.push_back(e.b.getNamedAttr("divisor_override", e.b.getI64IntegerAttr(div)));
    r = e.checked<AvgPool2dOp>({x4}, attrs, op);
  }
  return T(from4d(e, r, sd, unbatched));
}

/// Adaptive pooling: dim by dim, output cell i of a dim of size n reads
/// [floor(i n / o), ceil((i + 1) n / o)), as ATen.
template <int SD, bool Max> VarP adaptivePool(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  const int sd = SD;
  const bool isMax = Max;
  if (boolArg(a, "return_indices", false))
    throw Unsupported(op + " with return_indices is not supported yet");
  Value x = floatTensor(a.get("input"), op);
  bool unbatched;
  Value v = to4d(e, x, sd, unbatched, op);
  auto s = batchShapeOf(v);
  std::vector<int64_t> out;
  VarP os = a.get("output_size");
  if (!os)
    throw Unsupported(op + ": missing output_size");
  if (os->isConst() && PyLong_Check(os->obj.get()))
    out.assign(sd, asInt(os, "output_size"));
  else {
    std::vector<VarP> items = os->kind == Var::Kind::Tuple || os->kind == Var::Kind::List
                                  ? os->items
                                  : std::vector<VarP>{};
    if (items.empty()) {
      PyObject *o = constObj(os, "output_size");
      PyRef t = PyRef::steal(PySequence_Tuple(o));
      if (!t)
        throw Unsupported(BreakCategory::UnsupportedOp,
                          withPythonError("output_size must be ints"));
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t.get()); ++i)
        items.push_back(makeConst(PyRef::borrow(PyTuple_GET_ITEM(t.get(), i))));
    }
    if ((int)items.size() != sd)
      throw Unsupported(op + ": output_size must have " + std::to_string(sd) + " entries");
    for (int i = 0; i < sd; ++i)
      out.push_back(items[i]->isConst() && items[i]->obj.get() == Py_None
                        ? s[4 - sd + i]
                        : asInt(items[i], "output_size"));
  }
  if (sd == 1)
    out.insert(out.begin(), 1);
  DType d = dtypeOfValue(v);
  Value w = isMax ? v : e.cast(v, opmath(d));
  for (int i = 0; i < 2; ++i) {
    int64_t dim = 2 + i, n = s[dim], o = out[i];
    if (o < 0 || (n == 0 && o > 0))
      throw Unsupported(op + ": invalid output size (eager raises)");
    if (o == n)
      continue;
    std::vector<Value> parts;
    auto cur = batchShapeOf(w);
    cur[0] = -1; // the whole batch (SliceOp), symbolic or not: one graph for both
    for (int64_t k = 0; k < o; ++k) {
      int64_t lo = (k * n) / o, hi = ((k + 1) * n + o - 1) / o;
      std::vector<int64_t> st(4, 0), en = cur, step(4, 1);
      st[dim] = lo;
      en[dim] = hi;
      Value sl = e.b.create<SliceOp>(I.loc(), w, e.b.getDenseI64ArrayAttr(st),
                                     e.b.getDenseI64ArrayAttr(en), e.b.getDenseI64ArrayAttr(step));
      parts.push_back(isMax ? e.reduce<MaxOp>(sl, {dim}, true) : e.reduce<MeanOp>(sl, {dim}, true));
    }
    auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(dim))};
    w = parts.size() == 1 ? parts[0] : e.checked<ConcatOp>(parts, attrs, op);
  }
  return freshResult(from4d(e, e.cast(w, d), sd, unbatched));
}

/// (x - mean) * rsqrt(var + eps) over the last dim of [N, G, M] in f32.
Value normalizeRows(Emit &e, Value x3, double eps) {
  auto t = ttype(x3);
  return e.b.create<LayerNormOp>(e.I.loc(), t, x3, Value(), Value(), e.b.getI64IntegerAttr(1),
                                 e.b.getF64FloatAttr(eps));
}

/// `y * weight + bias` with per-channel (dim 1) parameters.
Value channelAffine(Emit &e, Value y, const Args &a, int64_t c, int64_t rank, DType compute,
                    const std::string &op) {
  std::vector<int64_t> bshape(rank - 1, 1);
  bshape[0] = c;
  for (const char *name : {"weight", "bias"}) {
    if (a.isNone(name))
      continue;
    Value p = tensorArg(a.get(name), op);
    if (shapeOf(p) != std::vector<int64_t>{c})
      throw Unsupported(op + ": " + name + " shape mismatch (eager raises)");
    p = e.reshape(e.cast(p, compute), bshape);
    y = std::string(name) == "weight" ? e.bin<MulOp>(y, p) : e.bin<AddOp>(y, p);
  }
  return y;
}

/// group_norm and instance_norm (`Instance`: one group per channel).
template <bool Instance> VarP groupNorm(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = floatTensor(a.get("input"), op);
  auto s = shapeOf(x);
  int64_t rank = s.size();
  DType d = dtypeOfValue(x), c = opmath(d);
  double eps = floatArg(a, "eps", 1e-5);
  {
    if (rank < 2)
      throw Unsupported(BreakCategory::UserError, op + " expects rank >= 2 (eager raises)");
    int64_t groups = Instance ? s[1] : asInt(a.get("num_groups"), "num_groups");
    if (Instance) {
      bool useInput = boolArg(a, "use_input_stats", true);
      if (!useInput)
        return callOp(I, "batch_norm",
                      {{"input", a.get("input")},
                       {"running_mean", a.get("running_mean")},
                       {"running_var", a.get("running_var")},
                       {"weight", a.get("weight")},
                       {"bias", a.get("bias")},
                       {"training", constBool(false)},
                       {"eps", constFloat(eps)}});
      if (!a.isNone("running_mean") || !a.isNone("running_var"))
        throw Unsupported("instance_norm updating running stats (in place) is not supported yet");
    }
    if (groups <= 0 || s[1] % groups)
      throw Unsupported(op + ": channels not divisible by groups (eager raises)");
    int64_t m = 1;
    for (int64_t i = 1; i < rank; ++i)
      m *= s[i];
    m /= groups;
    if (m == 0 || s[0] == 0)
      throw Unsupported(op + " of an empty tensor");
    Value y = normalizeRows(e, e.reshape(e.cast(x, c), {s[0], groups, m}), eps);
    y = channelAffine(e, e.reshape(y, s), a, s[1], rank, c, op);
    return T(e.cast(y, d));
  }
}

/// rms_norm(input, normalized_shape, weight, eps).
VarP rmsNorm(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = floatTensor(a.get("input"), op);
  auto s = shapeOf(x);
  int64_t rank = s.size();
  DType d = dtypeOfValue(x), c = opmath(d);
  double eps = floatArg(a, "eps", 1e-5);
  std::vector<int64_t> ns = asInts(a.get("normalized_shape"), "normalized_shape");
  if (ns.empty() || (int64_t)ns.size() > rank ||
      !std::equal(ns.begin(), ns.end(), s.end() - ns.size()))
    throw Unsupported("rms_norm normalized_shape does not match the input (eager raises)");
  if (a.isNone("eps"))
    eps = d == DType::F64   ? 2.220446049250313e-16
          : d == DType::F32 ? 1.1920928955078125e-07
          : d == DType::F16 ? 0.0009765625
                            : 0.0078125;
  std::vector<int64_t> dims;
  for (int64_t i = rank - ns.size(); i < rank; ++i)
    dims.push_back(i);
  Value w = e.cast(x, c);
  Value ms = e.reduce<MeanOp>(e.bin<MulOp>(w, w), dims, true);
  Value y = e.bin<MulOp>(w, e.unary<RsqrtOp>(e.bin<AddOp>(ms, e.num(eps, c))));
  if (!a.isNone("weight")) {
    Value wt = tensorArg(a.get("weight"), op);
    if (shapeOf(wt) != ns)
      throw Unsupported("rms_norm weight shape mismatch (eager raises)");
    y = e.bin<MulOp>(y, e.cast(wt, c));
  }
  return T(e.cast(y, d));
}

/// softmin (`Softmin`) and log_softmax.
template <bool Softmin> VarP softmaxLike(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorArg(a.get("input"), op);
  if (!a.isNone("dtype")) {
    auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
    if (!d)
      throw Unsupported(op + " dtype");
    x = e.cast(x, *d);
  }
  if (!isFloatingDType(dtypeOfValue(x)))
    throw Unsupported(op + " of an integer tensor without dtype= (eager raises)");
  if (a.isNone("dim"))
    throw Unsupported(op + " without dim");
  int64_t rank = ttype(x).getRank();
  int64_t dim = rank == 0 ? 0 : normDim(asInt(a.get("dim"), "dim"), rank);
  if (Softmin)
    return T(e.b.create<SoftmaxOp>(I.loc(), e.unary<NegOp>(x), e.b.getI64IntegerAttr(dim)));
  // log_softmax: (x - max) - log(sum(exp(x - max))) in opmath.
  DType d = dtypeOfValue(x), c = opmath(d);
  Value w = e.cast(x, c);
  std::vector<int64_t> dims;
  if (rank > 0)
    dims.push_back(dim);
  Value m = e.reduce<MaxOp>(w, dims, true);
  double inf = std::numeric_limits<double>::infinity();
  m = e.select(e.bin<EqOp>(e.unary<AbsOp>(m), e.num(inf, c)), e.num(0, c), m);
  Value shifted = e.bin<SubOp>(w, m);
  Value lse = e.unary<LogOp>(e.reduce<SumOp>(e.unary<ExpOp>(shifted), dims, true));
  return T(e.cast(e.bin<SubOp>(shifted, lse), d));
}

VarP attention(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value q = floatTensor(a.get("query"), op), k = floatTensor(a.get("key"), op),
        v = floatTensor(a.get("value"), op);
  double dropoutP = floatArg(a, "dropout_p", 0.0);
  if (boolArg(a, "enable_gqa", false))
    throw Unsupported("scaled_dot_product_attention with enable_gqa is not supported yet");
  DType d = dtypeOfValue(q), c = opmath(d);
  if (dtypeOfValue(k) != d || dtypeOfValue(v) != d)
    throw Unsupported(op + ": q, k, v dtypes differ (eager raises)");
  // L and S may be symbolic (the causal mask is then built from them).
  auto qs = ttype(q).getShape(), ks = ttype(k).getShape();
  if (qs.size() < 2 || ks.size() < 2)
    throw Unsupported(op + " expects rank >= 2");
  int64_t L = qs[qs.size() - 2], S = ks[ks.size() - 2], E = qs.back();
  if (mlir::ShapedType::isDynamic(E))
    throw Unsupported(op + " with a symbolic head size");
  double scale = a.isNone("scale") ? 1.0 / std::sqrt((double)E) : asDouble(a.get("scale"), "scale");
  std::vector<int64_t> perm;
  for (size_t i = 0; i < ks.size(); ++i)
    perm.push_back(i);
  std::swap(perm[ks.size() - 1], perm[ks.size() - 2]);
  Value scores = e.inferred<MatmulOp>({e.cast(q, c), e.permute(e.cast(k, c), perm)});
  scores = e.bin<MulOp>(scores, e.num(scale, c));
  double inf = std::numeric_limits<double>::infinity();
  if (boolArg(a, "is_causal", false)) {
    if (!a.isNone("attn_mask"))
      throw Unsupported("is_causal with attn_mask (eager raises)");
    int64_t lr = qs.size() - 2, sr = ks.size() - 2;
    if (I.symbolOfDim(q, lr) != -1 || I.symbolOfDim(k, sr) != -1) {
      // Symbolic L or S: j <= i from arange(L) and arange(S).
      Value rows = e.reshape(I.symIota(I.sizeVar(q, lr)), {L, 1});
      Value cols = e.reshape(I.symIota(I.sizeVar(k, sr)), {1, S});
      scores = e.select(e.bin<LeOp>(cols, rows), scores, e.num(-inf, c));
    } else {
      std::vector<double> mask;
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j)
          mask.push_back(j <= i);
      scores = e.select(e.dense({L, S}, DType::Bool, mask), scores, e.num(-inf, c));
    }
  } else if (!a.isNone("attn_mask")) {
    Value m = tensorArg(a.get("attn_mask"), op);
    if (dtypeOfValue(m) == DType::Bool)
      scores = e.select(m, scores, e.num(-inf, c));
    else
      scores = e.bin<AddOp>(scores, e.cast(m, c));
  }
  int64_t rank = ttype(scores).getRank();
  Value p = e.b.create<SoftmaxOp>(I.loc(), scores, e.b.getI64IntegerAttr(rank - 1));
  if (!a.isNone("attn_mask")) {
    // torch's _safe_softmax: a fully masked row (all -inf) gives zeros, not NaN.
    Value rowMax = e.reduce<MaxOp>(scores, {rank - 1}, true);
    p = e.select(e.bin<EqOp>(rowMax, e.num(-inf, c)), e.num(0, c), p);
  }
  // Dropout on the attention weights, as eager's math path (in opmath).
  if (dropoutP > 0)
    p = trainingDropout(I, p, dropoutP);
  Value r = e.inferred<MatmulOp>({p, e.cast(v, c)});
  return T(e.cast(r, d));
}

/// alpha_dropout and feature_alpha_dropout in eval mode (or p == 0): the
/// input.
VarP alphaDropout(Interpreter &I, const std::string &op, Args &a) {
  if (boolArg(a, "training", true) && floatArg(a, "p", 0.5) > 0)
    throw Unsupported(BreakCategory::Random,
                      op + " in training mode (random) is not supported yet");
  return T(tensorArg(a.get("input"), op));
}

/// dropout1d/2d/3d (`Spatial` = 1, 2, 3): in training mode each channel
/// (the dims before the last `Spatial`) kept or zeroed together; kiln/_random.py
/// replays the same mask shape. A 3-d input of dropout2d (eager reinterprets
/// it with a warning) breaks.
template <int64_t Spatial> VarP channelDropout(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(a.get("input"), op);
  double p = floatArg(a, "p", 0.5);
  if (!boolArg(a, "training", true) || p == 0)
    return a.get("input"); // eager returns the input object itself
  int64_t rank = ttype(x).getRank();
  if (rank != Spatial + 2 && (rank != Spatial + 1 || Spatial == 2))
    throw Unsupported(BreakCategory::Random, op + " of a rank-" + std::to_string(rank) +
                                                 " input in training mode is not supported");
  return freshResult(trainingDropout(I, x, p, Spatial)); // inplace=True: applyInPlace
}

/// F.normalize: input / clamp(norm(input, p, dim), eps).
VarP normalize(Interpreter &I, const std::string &op, Args &a) {
  {
    VarP n = callOp(I, "norm",
                    {{"input", a.get("input")},
                     {"p", a.isNone("p") ? constFloat(2.0) : a.get("p")},
                     {"dim", a.isNone("dim") ? constInt(1) : a.get("dim")},
                     {"keepdim", constBool(true)}});
    VarP den = callOp(I, "clamp",
                      {{"input", n}, {"min", a.isNone("eps") ? constFloat(1e-12) : a.get("eps")}});
    return callOp(I, "div", {{"input", a.get("input")}, {"other", den}});
  }
}

/// torch._weight_norm(v, g, dim) (nn.utils.parametrizations.weight_norm's
/// weight): v * (g / ||v||), the norm over every dim but `dim` (over all of
/// them for dim -1, as norm_except_dim).
VarP weightNorm(Interpreter &I, const std::string &op, Args &a) {
  VarP v = a.get("v");
  int64_t rank = ttype(tensorArg(v, op)).getRank();
  int64_t dim = a.isNone("dim") ? 0 : asInt(a.get("dim"), "dim");
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (dim == -1 || d != normDim(dim, rank))
      dims.push_back(d);
  VarP norm = callOp(I, "norm",
                     {{"input", v},
                      {"p", constFloat(2.0)},
                      {"dim", constIntTuple(dims)},
                      {"keepdim", constBool(true)}});
  VarP scale = callOp(I, "div", {{"input", a.get("g")}, {"other", norm}});
  return callOp(I, "mul", {{"input", v}, {"other", scale}});
}

VarP cosineSimilarity(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  {
    Value x1 = floatTensor(a.get("x1"), op), x2 = floatTensor(a.get("x2"), op);
    if (dtypeOfValue(x1) != dtypeOfValue(x2))
      throw Unsupported(op + ": dtypes differ (eager raises)");
    DType d = dtypeOfValue(x1), c = opmath(d);
    Value p = e.cast(x1, c), q = e.cast(x2, c);
    // Eager broadcasts the inputs before the norms: an input broadcast along
    // `dim` counts its values once per broadcast row (its norm over a size-1
    // dim was too small by that factor).
    if (ttype(p).getShape() != ttype(q).getShape()) {
      if (!ttype(p).hasStaticShape() || !ttype(q).hasStaticShape())
        throw Unsupported(op + " of inputs of different symbolic shapes");
      auto full = broadcastShapes(ttype(p).getShape(), ttype(q).getShape());
      if (!full)
        throw Unsupported(BreakCategory::UserError, op + ": shapes do not broadcast",
                          hint::kRaisesInEager);
      auto to = [&](Value t) {
        auto type = RankedTensorType::get(*full, ttype(t).getElementType());
        return ttype(t).getShape() == llvm::ArrayRef<int64_t>(*full)
                   ? t
                   : Value(e.b.create<BroadcastToOp>(I.loc(), type, t));
      };
      p = to(p);
      q = to(q);
    }
    int64_t rank = std::max(ttype(p).getRank(), ttype(q).getRank());
    int64_t dim = normDim(intArg(a, "dim", 1), rank);
    double eps = floatArg(a, "eps", 1e-8);
    auto unit = [&](Value t) {
      Value n = e.zeroGradAtZero(e.unary<SqrtOp>(
          e.reduce<SumOp>(e.bin<MulOp>(t, t), {dim - (rank - ttype(t).getRank())}, true)));
      return e.bin<DivOp>(t, e.tieGrad(e.bin<MaximumOp>(n, e.num(eps, c)), "all"));
    };
    Value prod = e.bin<MulOp>(unit(p), unit(q));
    return T(e.cast(e.reduce<SumOp>(prod, {dim}, false), d));
  }
}

/// pixel_shuffle (`Up`) and pixel_unshuffle: a reshape, permute, reshape.
template <bool Up> VarP pixelShuffle(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  {
    Value x = tensorArg(a.get("input"), op);
    auto s = shapeOf(x);
    int64_t r = asInt(a.get(Up ? "upscale_factor" : "downscale_factor"), "factor");
    if (s.size() < 3 || r <= 0)
      throw Unsupported(op + " expects rank >= 3 (eager raises)");
    std::vector<int64_t> batch(s.begin(), s.end() - 3);
    int64_t C = s[s.size() - 3], H = s[s.size() - 2], W = s.back(), nb = batch.size();
    std::vector<int64_t> split = batch, perm, out = batch;
    for (int64_t i = 0; i < nb; ++i)
      perm.push_back(i);
    if (Up) {
      if (C % (r * r))
        throw Unsupported("pixel_shuffle: channels not divisible (eager raises)");
      split.insert(split.end(), {C / (r * r), r, r, H, W});
      for (int64_t p : {0, 3, 1, 4, 2})
        perm.push_back(nb + p);
      out.insert(out.end(), {C / (r * r), H * r, W * r});
    } else {
      if (H % r || W % r)
        throw Unsupported("pixel_unshuffle: size not divisible (eager raises)");
      split.insert(split.end(), {C, H / r, r, W / r, r});
      for (int64_t p : {0, 2, 4, 1, 3})
        perm.push_back(nb + p);
      out.insert(out.end(), {C * r * r, H / r, W / r});
    }
    return freshResult(e.reshape(e.permute(e.reshape(x, split), perm), out));
  }
}

/// Linear interpolation of `x` along dim `d` from `in` to `out` elements,
/// with eager's source indices and weights computed in T, its opmath type
/// (ATen's area_pixel_compute_scale / _source_index, guard_index_and_lambda):
/// `x[i0] * l0 + x[i1] * l1`, two gathers and constant weights.
template <typename T>
Value linearAlong(Emit &e, Value x, int64_t d, int64_t in, int64_t out, bool alignCorners,
                  std::optional<double> scaleFactor, const std::string &op) {
  T scale = alignCorners                      ? (out > 1 ? (T)(in - 1) / (T)(out - 1) : T(0))
            : scaleFactor && *scaleFactor > 0 ? (T)(1.0 / *scaleFactor)
                                              : (T)in / (T)out;
  std::vector<double> i0s, i1s, w0s, w1s;
  for (int64_t o = 0; o < out; ++o) {
    T real = alignCorners ? scale * (T)o : std::max(scale * ((T)o + (T)0.5) - (T)0.5, (T)0);
    int64_t i0 = std::min<int64_t>((int64_t)std::floor(real), in - 1);
    T l1 = std::min(std::max(real - (T)i0, (T)0), (T)1);
    i0s.push_back((double)i0);
    i1s.push_back((double)(i0 + (i0 < in - 1 ? 1 : 0)));
    w0s.push_back((double)((T)1 - l1));
    w1s.push_back((double)l1);
  }
  auto shape = shapeOf(x);
  std::vector<int64_t> wshape(shape.size(), 1), full = shape;
  wshape[d] = full[d] = out;
  DType dt = dtypeOf(ttype(x).getElementType());
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(d))};
  auto gather = [&](const std::vector<double> &idx) {
    Value index =
        e.b.create<BroadcastToOp>(e.I.loc(), RankedTensorType::get(full, e.elt(DType::I64)),
                                  e.dense(wshape, DType::I64, idx));
    return e.checked<GatherOp>({x, index}, attrs, op);
  };
  Value lo = e.inferred<MulOp>({gather(i0s), e.dense(wshape, dt, w0s)});
  Value hi = e.inferred<MulOp>({gather(i1s), e.dense(wshape, dt, w1s)});
  return e.inferred<AddOp>({lo, hi});
}

/// F.interpolate in 'nearest' mode (a gather per spatial dim), 'linear'
/// (3-D) and 'bilinear' (4-D) for f32/f64 (linearAlong per spatial dim,
/// the last first, as eager's kernel nests them).
VarP interpolate(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  {
    std::string mode = strArg(a, "mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "bilinear")
      throw Unsupported("interpolate mode '" + mode + "' is not supported yet");
    if (boolArg(a, "antialias", false) || boolArg(a, "recompute_scale_factor", false))
      throw Unsupported("interpolate with antialias/recompute_scale_factor");
    Value x = tensorArg(a.get("input"), op);
    auto s = shapeOf(x);
    int64_t sd = s.size() - 2;
    if (sd < 1 || sd > 2)
      throw Unsupported("interpolate of a " + std::to_string(s.size()) + "-D input");
    if (mode != "nearest" && (mode == "linear") != (sd == 1))
      throw Unsupported("interpolate mode '" + mode + "' of a " + std::to_string(s.size()) +
                        "-D input (eager raises)");
    bool alignCorners = boolArg(a, "align_corners", false);
    if (mode == "nearest" && alignCorners)
      throw Unsupported("align_corners with mode 'nearest' (eager raises)");
    std::vector<int64_t> out;
    std::vector<double> scales;
    std::vector<std::optional<double>> factors(sd);
    if (!a.isNone("size")) {
      out = nInts(a, "size", sd, {});
      for (int64_t i = 0; i < sd; ++i)
        scales.push_back((float)s[2 + i] / (float)out[i]);
    } else if (!a.isNone("scale_factor")) {
      VarP sf = a.get("scale_factor");
      std::vector<double> f;
      if (sf->kind == Var::Kind::Tuple || sf->kind == Var::Kind::List)
        for (auto &i : sf->items)
          f.push_back(asDouble(i, "scale_factor"));
      else if (sf->isConst() && (PyTuple_Check(sf->obj.get()) || PyList_Check(sf->obj.get())))
        for (Py_ssize_t i = 0; i < PySequence_Size(sf->obj.get()); ++i)
          f.push_back(asDouble(makeConst(PyRef::steal(PySequence_GetItem(sf->obj.get(), i))),
                               "scale_factor"));
      else
        f.assign(sd, asDouble(sf, "scale_factor"));
      if ((int64_t)f.size() != sd)
        throw Unsupported("scale_factor length mismatch (eager raises)");
      for (int64_t i = 0; i < sd; ++i) {
        out.push_back((int64_t)std::floor(s[2 + i] * f[i]));
        scales.push_back((float)(1.0 / f[i]));
        factors[i] = f[i];
      }
    } else
      throw Unsupported("interpolate needs size or scale_factor (eager raises)");
    for (int64_t n : out)
      if (n <= 0)
        throw Unsupported("interpolate to an empty size (eager raises)");
    Value r = x;
    if (mode != "nearest") {
      DType dt = dtypeOf(ttype(x).getElementType());
      if (dt != DType::F32 && dt != DType::F64)
        throw Unsupported("interpolate '" + mode + "' of a " + dtypeName(dt) + " tensor");
      for (int64_t i = sd - 1; i >= 0; --i)
        r = dt == DType::F64
                ? linearAlong<double>(e, r, 2 + i, s[2 + i], out[i], alignCorners, factors[i], op)
                : linearAlong<float>(e, r, 2 + i, s[2 + i], out[i], alignCorners, factors[i], op);
      return freshResult(r);
    }
    for (int64_t i = 0; i < sd; ++i) {
      std::vector<double> idx;
      for (int64_t o = 0; o < out[i]; ++o)
        idx.push_back(
            std::min<int64_t>((int64_t)std::floor((float)(o * (float)scales[i])), s[2 + i] - 1));
      auto cur = shapeOf(r);
      std::vector<int64_t> ishape(cur.size(), 1), full = cur;
      ishape[2 + i] = full[2 + i] = out[i];
      Value index = e.dense(ishape, DType::I64, idx);
      index =
          e.b.create<BroadcastToOp>(I.loc(), RankedTensorType::get(full, e.elt(DType::I64)), index);
      auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(2 + i))};
      r = e.checked<GatherOp>({r, index}, attrs, op);
    }
    return freshResult(r);
  }
}

} // namespace

void registerNNOps(OpRegistry &r) {
  const Params convParams{"input", "weight", "bias", "stride", "padding", "dilation", "groups"};
  r.op("conv1d", conv<1>, convParams).functional().torch();
  r.op("conv2d", conv<2>, convParams).functional().torch();
  const Params maxPool{"input",    "kernel_size", "stride",        "padding",
                       "dilation", "ceil_mode",   "return_indices"};
  r.op("max_pool1d", pool<1, true>, maxPool).functional().torch();
  r.op("max_pool2d", pool<2, true>, maxPool).functional().torch();
  const Params avgPool{"input",   "kernel_size", "stride",
                       "padding", "ceil_mode",   "count_include_pad"};
  r.op("avg_pool1d", pool<1, false>, avgPool).functional().torch();
  r.op("avg_pool2d", pool<2, false>, avgPool.with(Params{"divisor_override"})).functional();
  const Params adaptive{"input", "output_size"};
  r.op("adaptive_avg_pool1d", adaptivePool<1, false>, adaptive).functional().torch();
  r.op("adaptive_avg_pool2d", adaptivePool<2, false>, adaptive, KeepsMemoryFormat).functional();
  const Params adaptiveMax = adaptive.with(Params{"return_indices"});
  r.op("adaptive_max_pool1d", adaptivePool<1, true>, adaptiveMax).functional();
  r.op("adaptive_max_pool2d", adaptivePool<2, true>, adaptiveMax, KeepsMemoryFormat).functional();
  r.op("group_norm", groupNorm<false>, Params{"input", "num_groups", "weight", "bias", "eps"},
       KeepsMemoryFormat)
      .functional();
  r.op("instance_norm", groupNorm<true>,
       Params{"input", "running_mean", "running_var", "weight", "bias", "use_input_stats",
              "momentum", "eps"})
      .functional();
  r.op("rms_norm", rmsNorm, Params{"input", "normalized_shape", "weight", "eps"}).functional();
  r.op("log_softmax", softmaxLike<false>, Params{"input", "dim", "dtype"})
      .torchAndMethod()
      .functional(Params{"input", "dim", "_stacklevel", "dtype"});
  r.op("softmin", softmaxLike<true>, Params{"input", "dim", "_stacklevel", "dtype"}).functional();
  r.op("sdpa", attention,
       Params{"query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
              "enable_gqa"})
      .functional("scaled_dot_product_attention");
  const Params dropoutParams{"input", "p", "training", "inplace"};
  r.op("alpha_dropout", alphaDropout, dropoutParams, View)
      .functional()
      .functional("feature_alpha_dropout");
  r.op("dropout1d", channelDropout<1>, dropoutParams).functional();
  r.op("dropout2d", channelDropout<2>, dropoutParams).functional();
  r.op("dropout3d", channelDropout<3>, dropoutParams).functional();
  r.op("normalize", normalize, Params{"input", "p", "dim", "eps", "out"}).functional();
  r.op("weight_norm", weightNorm, Params{"v", "g", "dim"}).torch("_weight_norm");
  r.op("cosine_similarity", cosineSimilarity, Params{"x1", "x2", "dim", "eps"})
      .functional()
      .torch();
  r.op("pixel_shuffle", pixelShuffle<true>, Params{"input", "upscale_factor"}, KeepsMemoryFormat)
      .functional();
  r.op("pixel_unshuffle", pixelShuffle<false>, Params{"input", "downscale_factor"},
       KeepsMemoryFormat)
      .functional();
  r.op("interpolate", interpolate,
       Params{"input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor",
              "antialias"},
       KeepsMemoryFormat)
      .functional();
}

} // namespace kiln
