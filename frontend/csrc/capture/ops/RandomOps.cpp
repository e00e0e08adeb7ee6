//===- RandomOps.cpp - random tensors and dropout in graphs -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The random ops of torch captured as `kiln.random` (Philox 4x32-10, see
// ir/KilnRandomOps.td): torch.rand/randn/randint and their `_like` forms,
// torch.bernoulli and Tensor.bernoulli(_), and dropout in training mode
// (trainingDropout, used by F.dropout, dropout1d/2d/3d and
// scaled_dot_product_attention). torch.randperm and torch.multinomial run
// through torch inside the graph on a generator seeded from the same seed
// and stream (seededTorchCall). Each random op takes the graph's next
// stream of the per-call seed (Interpreter::random). kiln/_random.py
// replays exactly these recipes with torch ops (the backward of a graph
// that needs gradients recomputes eagerly, with the same masks): a recipe
// changed here changes there too. A `generator=` argument breaks the graph
// (kiln draws from torch's default generator only).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

using namespace mlir::kiln;

mlir::Value Interpreter::random(llvm::StringRef distribution, mlir::RankedTensorType type,
                                mlir::Value like,
                                std::optional<std::pair<int64_t, int64_t>> bounds) {
  auto i64Scalar = mlir::RankedTensorType::get({}, b_.getI64Type());
  if (!randomSeed_) {
    // The seed: a graph input without a source, drawn on every call.
    GraphInput in;
    in.source = -1;
    in.kind = GraphInput::Kind::Seed;
    out_.inputs.push_back(in);
    inputObjects_.push_back(PyRef::borrow(Py_None));
    randomSeed_ = func_.getBody().front().addArgument(i64Scalar, loc_);
  }
  // Stream k starts at counter k * 2^40: no two ops of a graph share values
  // unless one has 2^40 elements or more (takeRandomStream reads it back).
  constexpr int64_t kStreamBits = 40;
  int64_t stream = randomStreams_++;
  auto offsetAttr =
      mlir::DenseElementsAttr::get(i64Scalar, b_.getI64IntegerAttr(stream << kStreamBits));
  Value offset = b_.create<ConstantOp>(loc_, llvm::cast<mlir::ElementsAttr>(offsetAttr));
  mlir::IntegerAttr low, high;
  if (bounds) {
    low = b_.getI64IntegerAttr(bounds->first);
    high = b_.getI64IntegerAttr(bounds->second);
  }
  if (type.hasStaticShape())
    like = Value();
  return b_.create<RandomOp>(loc_, type, b_.getStringAttr(distribution), randomSeed_, offset, like,
                             low, high);
}

Value trainingDropout(Interpreter &I, Value x, double p, int64_t spatialDims) {
  Emit e(I);
  auto type = ttype(x);
  DType d = dtypeOfValue(x);
  if (!isFloatingDType(d))
    throw Unsupported(BreakCategory::UserError, "dropout of an integer tensor (eager raises)");
  if (p < 0 || p > 1)
    throw Unsupported(BreakCategory::UserError,
                      "dropout probability outside [0, 1] (eager raises)");
  // The mask's shape: x's, or one value per channel (N, C, 1, ...).
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  for (int64_t i = (int64_t)shape.size() - spatialDims; i < (int64_t)shape.size(); ++i)
    shape[i] = 1;
  if (spatialDims > 0 && mlir::ShapedType::isDynamicShape(shape))
    throw Unsupported(BreakCategory::DynamicShape, "channel dropout with a symbolic size");
  auto maskType = RankedTensorType::get(shape, e.elt(DType::F32));
  Value u = I.random("uniform", maskType, spatialDims > 0 ? Value() : x);
  // keep = u >= p (in f32), noise = keep ? 1 / (1 - p) : 0 in x's dtype.
  Value keep = e.bin<GeOp>(u, e.num(p, DType::F32));
  Value noise = e.select(keep, e.num(p < 1 ? 1.0 / (1.0 - p) : 0.0, d), e.num(0.0, d));
  return e.bin<MulOp>(x, noise);
}

namespace {

/// Rejects a `generator=` other than None (kiln draws from torch's default
/// generator only).
void defaultGeneratorOnly(const std::string &op, const Args &a) {
  if (!a.isNone("generator"))
    throw Unsupported(BreakCategory::Random, op + " with a generator= argument",
                      "kiln compiles random ops on torch's default generator; pass no "
                      "generator, or let this call run eagerly");
}

/// The result type of a random factory from its sizes (static) and dtype.
RankedTensorType factoryType(Emit &e, const std::string &op, const FactorySizes &sizes, DType d) {
  if (!sizes.symDims.empty() || mlir::ShapedType::isDynamicShape(sizes.shape))
    throw Unsupported(BreakCategory::DynamicShape, op + " of a symbolic size");
  return RankedTensorType::get(sizes.shape, e.elt(d));
}

/// rand/randn (`Normal` false/true) and their `_like` forms.
template <bool Normal, bool Like> VarP randFloat(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  defaultGeneratorOnly(op, a);
  std::optional<DType> dtype = factoryDType(I, op, a, Like);
  Value like;
  RankedTensorType type;
  if (Like) {
    like = tensorArg(a.get("input"), op);
    DType d = dtype ? *dtype : dtypeOfValue(like);
    type = ttype(like).clone(e.elt(d));
  } else {
    type = factoryType(e, op, sizeArgument(op, a), dtype ? *dtype : defaultFloat());
  }
  if (!isFloatingDType(dtypeOf(type.getElementType())))
    throw Unsupported(BreakCategory::UserError, op + " of an integer dtype (eager raises)");
  return T(I.random(Normal ? "normal" : "uniform", type, like));
}

/// The [low, high) bounds of randint/randint_like: `(high)` or `(low, high)`.
std::pair<int64_t, int64_t> intBounds(const std::string &op, const VarP &first,
                                      const VarP &second) {
  int64_t low = second ? asInt(first, "low") : 0;
  int64_t high = second ? asInt(second, "high") : asInt(first, "high");
  if (low >= high)
    throw Unsupported(BreakCategory::UserError, op + " with low >= high (eager raises)");
  return {low, high};
}

/// torch.randint(high, size) / randint(low, high, size).
VarP randint(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  defaultGeneratorOnly(op, a);
  std::optional<DType> dtype = factoryDType(I, op, a, false);
  VarP first = a.get("low"), second = a.get("high"), size = a.get("size");
  if (!size) { // randint(high, size): the size was bound to `high`
    size = second;
    second = nullptr;
  }
  auto bounds = intBounds(op, first, second);
  Args sized;
  sized.named["size"] = size;
  RankedTensorType type = factoryType(e, op, sizeArgument(op, sized), dtype ? *dtype : DType::I64);
  if (!llvm::isa<mlir::IntegerType>(type.getElementType()) || type.getElementType().isInteger(1))
    throw Unsupported(op + " of a float or bool dtype");
  return T(I.random("integer", type, Value(), bounds));
}

/// torch.randint_like(input, high) / randint_like(input, low, high).
VarP randintLike(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  defaultGeneratorOnly(op, a);
  std::optional<DType> dtype = factoryDType(I, op, a, true);
  Value x = tensorArg(a.get("input"), op);
  auto bounds = intBounds(op, a.get("low"), a.get("high"));
  DType d = dtype ? *dtype : dtypeOfValue(x);
  if (isFloatingDType(d) || d == DType::Bool) // float results of integers: through f64
    throw Unsupported(op + " of a float or bool tensor");
  return T(I.random("integer", ttype(x).clone(e.elt(d)), x, bounds));
}

/// `u < p` in x's dtype over x's shape: u uniform in f32 (f64 for f64).
Value bernoulliOf(Interpreter &I, Value x, const VarP &p, const std::string &op) {
  Emit e(I);
  DType d = dtypeOfValue(x);
  if (!isFloatingDType(d))
    throw Unsupported(op + " of an integer tensor");
  DType work = d == DType::F64 ? DType::F64 : DType::F32;
  Value u = I.random("uniform", ttype(x).clone(e.elt(work)), x);
  Value prob = p && p->isTensor() ? e.cast(p->value, work) : e.num(asDouble(p, "p"), work);
  return e.cast(e.bin<LtOp>(u, prob), d);
}

/// torch.bernoulli(input) / bernoulli(input, p) and Tensor.bernoulli(p=None).
VarP bernoulli(Interpreter &I, const std::string &op, Args &a) {
  defaultGeneratorOnly(op, a);
  if (!a.isNone("out"))
    throw Unsupported(BreakCategory::UnsupportedOp, op + " with out=");
  VarP x = inputArg(a, op);
  VarP p = a.isNone("p") ? x : a.get("p");
  return T(bernoulliOf(I, tensorArg(x, op), p, op));
}

/// Tensor.bernoulli_(p=0.5): self filled with bernoulli(p), in place.
VarP bernoulliInPlace(Interpreter &I, const std::string &op, Args &a) {
  defaultGeneratorOnly(op, a);
  VarP self = inputArg(a, op);
  VarP p = a.isNone("p") ? constFloat(0.5) : a.get("p");
  return I.assignInPlace(self, bernoulliOf(I, tensorArg(self, op), p, op), "Tensor.bernoulli_");
}

/// Which distribution Tensor.uniform_/normal_/exponential_ fill with.
enum class Fill { Uniform, Normal, Exponential };

/// Tensor.uniform_(from=0, to=1), normal_(mean=0, std=1),
/// exponential_(lambd=1): self filled from kiln.random, in place (same
/// distributions as eager, not eager's stream). exponential is
/// -log1p(-u) / lambd, at least the smallest normal float (eager never
/// draws 0 either: gumbel_softmax takes its log).
template <Fill F> VarP fillInPlace(Interpreter &I, const std::string &op, Args &a) {
  defaultGeneratorOnly(op, a);
  VarP self = inputArg(a, op);
  Value x = tensorArg(self, op);
  DType d = dtypeOfValue(x);
  if (!isFloatingDType(d) || isNarrow(d))
    throw Unsupported(BreakCategory::Random, op + " of an integer or 16-bit float tensor");
  Emit e(I);
  const char *first = F == Fill::Uniform ? "from" : F == Fill::Normal ? "mean" : "lambd";
  double p = floatArg(a, first, F == Fill::Exponential ? 1.0 : 0.0);
  double q = F == Fill::Exponential ? 0.0 : floatArg(a, F == Fill::Uniform ? "to" : "std", 1.0);
  if ((F == Fill::Exponential && !(p > 0)) || (F == Fill::Normal && q < 0) ||
      (F == Fill::Uniform && !(p <= q)))
    throw Unsupported(BreakCategory::UserError, op + " with invalid parameters (eager raises)");
  Value u = I.random(F == Fill::Normal ? "normal" : "uniform", ttype(x), x);
  Value r;
  if (F == Fill::Uniform)
    r = e.bin<AddOp>(e.num(p, d), e.bin<MulOp>(u, e.num(q - p, d)));
  else if (F == Fill::Normal)
    r = e.bin<AddOp>(e.num(p, d), e.bin<MulOp>(u, e.num(q, d)));
  else
    r = e.bin<MaximumOp>(
        e.bin<DivOp>(e.unary<NegOp>(e.unary<Log1pOp>(e.unary<NegOp>(u))), e.num(p, d)),
        e.num(d == DType::F64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38, d));
  return I.assignInPlace(self, r, "Tensor." + op);
}

/// `torch.<name>(*args, **kwargs)` run through torch inside the graph
/// (Fallback.cpp) on a torch.Generator seeded from the graph's per-call seed
/// and the call's stream (kiln._random.seeded): eager's kernel, so eager's
/// distribution and argument errors, reproducible under torch.manual_seed,
/// not eager's stream.
/// The graph's per-call seed and the index of a random stream taken for a
/// call that is not a kiln.random: Interpreter::random's bookkeeping, its
/// (empty, unused) op erased.
std::pair<Value, int64_t> takeRandomStream(Interpreter &I) {
  Emit e(I);
  Value probe = I.random("integer", RankedTensorType::get({0}, e.elt(DType::I64)), Value(),
                         std::make_pair<int64_t, int64_t>(0, 1));
  auto op = probe.getDefiningOp<RandomOp>();
  auto offset = op.getOffset().getDefiningOp<ConstantOp>();
  auto attr = llvm::cast<mlir::DenseElementsAttr>(offset.getValue());
  int64_t stream = attr.getSplatValue<llvm::APInt>().getSExtValue() >> 40;
  Value seed = op.getSeed();
  op.erase();
  offset.erase();
  return {seed, stream};
}

VarP seededTorchCall(Interpreter &I, const char *name, std::vector<VarP> args,
                     std::map<std::string, VarP> kwargs, bool factory) {
  auto [seed, stream] = takeRandomStream(I);
  PyRef fn = PyRef::steal(PyObject_GetAttrString(torchModule(), name));
  PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._random"));
  PyRef make = mod ? PyRef::steal(PyObject_GetAttrString(mod.get(), "seeded")) : PyRef();
  PyRef call =
      make && fn
          ? PyRef::steal(PyObject_CallFunction(make.get(), "OLO", fn.get(), (long long)stream,
                                               factory ? Py_True : Py_False))
          : PyRef();
  if (!call)
    throw Unsupported(BreakCategory::Random, withPythonError(std::string("torch.") + name +
                                                             ": kiln._random.seeded failed"));
  args.insert(args.begin(), makeTensor(seed));
  VarP r = I.torchFallback(call.get(), "", args, kwargs, nullptr);
  if (!r)
    throw Unsupported(BreakCategory::Random, std::string("torch.") + name + " is not compiled");
  return r;
}

/// torch.multinomial / Tensor.multinomial(input, num_samples,
/// replacement=False): through torch, seeded (seededTorchCall).
VarP multinomial(Interpreter &I, const std::string &op, Args &a) {
  defaultGeneratorOnly(op, a);
  if (!a.isNone("out"))
    throw Unsupported(BreakCategory::Random, op + " with out=");
  VarP input = inputArg(a, op);
  VarP samples = a.get("num_samples");
  if (!input->isTensor() || !samples || !samples->isConst())
    throw Unsupported(BreakCategory::Random, op + " with a non-constant num_samples");
  std::map<std::string, VarP> kwargs;
  if (VarP rep = a.get("replacement"))
    kwargs["replacement"] = rep;
  return seededTorchCall(I, "multinomial", {input, samples}, kwargs, false);
}

/// torch.randperm(n, dtype=None, device=None, ...): through torch, seeded.
VarP randperm(Interpreter &I, const std::string &op, Args &a) {
  defaultGeneratorOnly(op, a);
  VarP n = a.get("n");
  if (!n || !n->isConst() || !a.isNone("out") || !a.isNone("layout") || !a.isNone("pin_memory"))
    throw Unsupported(BreakCategory::Random, op + " of a symbolic size or with out=/layout=");
  VarP grad = a.get("requires_grad");
  if (grad && !(grad->isConst() && PyObject_IsTrue(grad->obj.get()) == 0))
    throw Unsupported(BreakCategory::Random, op + "(requires_grad=...)");
  std::map<std::string, VarP> kwargs;
  for (const char *k : {"dtype", "device"})
    if (!a.isNone(k))
      kwargs[k] = a.get(k);
  return seededTorchCall(I, "randperm", {n}, kwargs, true);
}

} // namespace

void registerRandomOps(OpRegistry &r) {
  const Params keywords{"generator", "out",           "dtype",      "layout",
                        "device",    "requires_grad", "pin_memory", "memory_format"};
  r.op("rand", randFloat<false, false>, Params{"*size"}.with(keywords)).torch();
  r.op("randn", randFloat<true, false>, Params{"*size"}.with(keywords)).torch();
  r.op("rand_like", randFloat<false, true>, Params{"input"}.with(keywords)).torch();
  r.op("randn_like", randFloat<true, true>, Params{"input"}.with(keywords)).torch();
  r.op("randint", randint, Params{"low", "high", "size"}.with(keywords)).torch();
  r.op("randint_like", randintLike, Params{"input", "low", "high"}.with(keywords)).torch();
  r.op("bernoulli", bernoulli, Params{"input", "p", "generator", "out"}).torchAndMethod();
  r.op("bernoulli_", bernoulliInPlace, Params{"input", "p", "generator"}, Composite).method();
  r.op("uniform_", fillInPlace<Fill::Uniform>, Params{"input", "from", "to", "generator"},
       Composite)
      .method();
  r.op("normal_", fillInPlace<Fill::Normal>, Params{"input", "mean", "std", "generator"}, Composite)
      .method();
  r.op("exponential_", fillInPlace<Fill::Exponential>, Params{"input", "lambd", "generator"},
       Composite)
      .method();
  r.op("randperm", randperm, Params{"n"}.with(keywords)).torch();
  r.op("multinomial", multinomial,
       Params{"input", "num_samples", "replacement", "generator", "out"})
      .torchAndMethod();
}

} // namespace kiln
