//===- CudaEmitter.cpp - fused linalg on tensors → CUDA C++ -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The driver of the CUDA emitter: the prepare pipeline, the launch-size
// rules, and FunctionEmitter's walk of each func.func in order, which
// assigns a buffer to every tensor value (arguments, generic results;
// expand/collapse shapes alias their source; tensor.empty and linalg.fill
// only supply output shapes and reduction inits), hands each linalg.generic
// to CudaKernels.cpp or CudaRowGroups.cpp, records the launch plan, and
// prints it with the kernels after the device preamble (NaN-aware max/min,
// combiners, kiln_block_reduce). Anything else is reported at the op's
// location.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitter.h"
#include "codegen/cuda/CudaEmitterInternal.h"

#include "codegen/common/Passes.h"
#include "codegen/common/Patterns.h"
#include "transforms/Passes.h"
#include "transforms/QuantPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::kiln::cuda {

using namespace detail;

void buildCudaPreparePipeline(OpPassManager &pm) {
  // Quantized layers: q/dq → kiln.qlinear, lowered to an int8 GEMM (a
  // cuBLASLt extern step) between quantize and epilogue kernels
  // (codegen/common/Quant.cpp). A no-op without quantization ops.
  pm.addNestedPass<func::FuncOp>(createFoldQuantPass());
  buildOptimizePipeline(pm);
  FusedLinalgOptions fused;
  // A 16-bit parameter's cast to f32 (layer_norm's weight and bias) is
  // read by every row: convert it where it is read, so the row group
  // stays one kernel (as in f32).
  fused.fuseBroadcastCasts = true;
  buildFusedLinalgPipeline(pm, fused);
}

int64_t pointwiseGridSize(int64_t numElements) {
  int64_t blocks = (numElements + kPointwiseBlock - 1) / kPointwiseBlock;
  return std::max<int64_t>(1, std::min(blocks, kMaxPointwiseGrid));
}

int64_t reductionBlockSize(int64_t rowLength) {
  int64_t want = (rowLength + 3) / 4; // ≥ 4 elements per thread
  int64_t threads = 32;
  while (threads < want && threads < 1024)
    threads *= 2;
  return threads;
}

namespace detail {

int FunctionEmitter::newBuffer(RankedTensorType t, std::string role, std::string name,
                               SymShape dims) {
  if (name.empty())
    name = "buf" + std::to_string(tempCount++);
  if (dims.empty())
    dims = staticShape(t.getShape());
  buffers.push_back({name, t, role, std::move(dims)});
  return int(buffers.size()) - 1;
}

std::string FunctionEmitter::nextKernelName() {
  return func.getSymName().str() + "_k" + std::to_string(kernelCount++);
}

void FunctionEmitter::openKernel(const KernelInfo &k, ArrayRef<std::string> params) {
  os << "extern \"C\" __global__ void __launch_bounds__(" << k.blockX << ") " << k.name << "("
     << llvm::join(params, ", ") << ") {\n";
}

void FunctionEmitter::addKernel(KernelInfo k) {
  if (k.work.empty())
    plan.push_back(k.name + "<<<" + std::to_string(k.gridX) + ", " + std::to_string(k.blockX) +
                   ">>>(" + llvm::join(k.args, ", ") + ")");
  else if (k.rowLength.empty())
    plan.push_back(k.name + "<<<grid(" + k.work + "), " + std::to_string(kPointwiseBlock) + ">>>(" +
                   llvm::join(k.args, ", ") + ", symbols)");
  else
    plan.push_back(k.name + "<<<rows(" + k.work + "), rule(row length " + k.rowLength + ")>>>(" +
                   llvm::join(k.args, ", ") + ", symbols)");
  fplan.steps.push_back({LaunchStep::Kernel, out.kernels.size()});
  out.kernels.push_back(std::move(k));
}

void FunctionEmitter::addExtern(ExternCall e) {
  auto size = [&](size_t i, int64_t v) {
    if (e.dims.empty())
      return std::to_string(v);
    return e.dims[i].find(' ') == std::string::npos ? e.dims[i] : "(" + e.dims[i] + ")";
  };
  std::string shape = (e.batched ? size(0, e.batch) + "x" : std::string()) + size(1, e.m) + "x" +
                      size(2, e.n) + "x" + size(3, e.k);
  plan.push_back(e.name + ": extern GEMM " + shape + " (MxNxK" +
                 (e.transB ? ", B transposed" : "") +
                 (e.epilogue != "none" ? ", epilogue " + e.epilogue : "") + ")(" +
                 llvm::join(e.args, ", ") + ")");
  fplan.steps.push_back({LaunchStep::Extern, out.externs.size()});
  out.externs.push_back(std::move(e));
}

LogicalResult FunctionEmitter::emit() {
  fplan.name = func.getSymName().str();
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto tt = dyn_cast<RankedTensorType>(arg.getType());
    if (!tt || !storageType(tt.getElementType()))
      return func.emitError("CUDA emitter: argument #")
             << i << " must be a ranked tensor of a supported element type, got " << arg.getType();
    // Each dynamic dim of an argument is a symbol (a kernel parameter).
    SymShape dims = staticShape(tt.getShape());
    for (int64_t d = 0; d < tt.getRank(); ++d)
      if (tt.isDynamicDim(d)) {
        dims[d] = SymSize::symbol(fplan.symbols.size());
        fplan.symbols.push_back({unsigned(i), unsigned(d)});
      }
    if (!tt.hasStaticShape())
      symShapes[arg] = dims;
    tensors[arg] =
        TensorInfo{newBuffer(tt, "input " + std::to_string(i), "arg" + std::to_string(i), dims),
                   std::nullopt, false};
    fplan.inputs.push_back("arg" + std::to_string(i));
  }
  if (fuseRows)
    planRowGroups();
  for (Operation &op : func.getBody().front())
    if (failed(emitOrCollect(op)))
      return failure();
  return success();
}

LogicalResult FunctionEmitter::emitOrCollect(Operation &op) {
  size_t textMark = text.size(), planMark = plan.size(), stepMark = fplan.steps.size();
  size_t kernelMark = out.kernels.size(), externMark = out.externs.size();
  size_t bufferMark = buffers.size();
  int kernelCountMark = kernelCount, gemmMark = gemmCount, tempMark = tempCount;
  if (succeeded(emitOp(op)))
    return success();
  if (!lastError || isa<func::ReturnOp>(op))
    return failure();
  text.resize(textMark);
  plan.resize(planMark);
  fplan.steps.resize(stepMark);
  out.kernels.resize(kernelMark);
  out.externs.resize(externMark);
  buffers.resize(bufferMark);
  kernelCount = kernelCountMark;
  gemmCount = gemmMark;
  tempCount = tempMark;
  auto it = groups.find(&op);
  if (it != groups.end()) {
    // Retry the members one by one: only the failing ones are unsupported.
    RowGroup group = it->second;
    groups.erase(it);
    for (linalg::GenericOp g : group.members) {
      grouped.erase(g);
      for (Value r : g->getResults())
        tensors.erase(r);
    }
    return emitOrCollect(op);
  }
  recordUnsupported(&op);
  return success();
}

void FunctionEmitter::recordUnsupported(Operation *op) {
  UnsupportedOp u;
  u.function = func.getSymName().str();
  u.op = op->getName().getStringRef().str();
  u.location = locationString(op->getLoc());
  u.reason = lastError->empty() ? "(no diagnostic)" : *lastError;
  lastError->clear();
  for (Value r : op->getResults()) {
    auto tt = dyn_cast<RankedTensorType>(r.getType());
    if (!tt || !storageType(tt.getElementType()))
      continue;
    FailureOr<SymShape> dims = shapeOf(r);
    lastError->clear();
    if (failed(dims))
      continue;
    int b = newBuffer(tt, "temporary", "", *dims);
    tensors[r] = TensorInfo{b, std::nullopt, false};
    u.results.push_back(buffers[b].name);
  }
  plan.push_back("unsupported " + u.op + " (" + u.reason + ") -> (" + llvm::join(u.results, ", ") +
                 ")");
  fplan.steps.push_back({LaunchStep::Unsupported, out.unsupported.size()});
  out.unsupported.push_back(std::move(u));
}

/// Whether every use of `v` is the shape operand of a tensor.reshape (no
/// kernel or table: the reshape's sizes are traced by shapeOf).
static bool onlyReshapeShape(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUses(), [](OpOperand &use) {
    auto r = dyn_cast<tensor::ReshapeOp>(use.getOwner());
    return r && use.get() == r.getShape();
  });
}

/// Whether `g` is a `kiln.int8_view` / `fp8_view` unpacking of i32 words
/// into bytes (codegen/common/Quant.cpp) read only as the weight of GEMMs:
/// the GEMM reads the words' buffer, whose bytes are those values, and no
/// kernel is needed.
static bool isGemmWeightByteView(linalg::GenericOp g) {
  return g->hasAttr(kByteViewAttr) && g.getNumDpsInputs() == 1 && !g->use_empty() &&
         llvm::all_of(g->getUses(), [](OpOperand &use) {
           return isa<linalg::MatmulTransposeBOp>(use.getOwner()) && use.getOperandNumber() == 1;
         });
}

LogicalResult FunctionEmitter::emitOp(Operation &op) {
  if (failed(checkDynamicSupported(op)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> LogicalResult {
        if (isa<RankedTensorType>(c.getType()) && !onlyReshapeShape(c.getResult())) {
          auto dense = dyn_cast<SplatElementsAttr>(c.getValue());
          if (dense) {
            if (auto lit = attrLiteral(dense.getSplatValue<TypedAttr>()))
              tensors[c.getResult()] = TensorInfo{-1, *lit, false};
          } else if (!c.getResult().use_empty()) {
            return emitConstantTable(c);
          }
        }
        return success();
      })
      .Case<tensor::EmptyOp>([&](tensor::EmptyOp e) {
        tensors[e.getResult()] = TensorInfo{-1, std::nullopt, true};
        return success();
      })
      .Case<linalg::FillOp>([&](linalg::FillOp f) -> LogicalResult {
        auto lit = scalarOf(f.getInputs()[0], f);
        if (!lit)
          return failure();
        tensors[f.getResult(0)] = TensorInfo{-1, *lit, false};
        return success();
      })
      // Index computations of dynamic sizes: read through shapeOf/sizeOf.
      .Case<tensor::DimOp, arith::MulIOp>([&](Operation *) { return success(); })
      // A reshape's shape operand: read through shapeOf (only as one).
      .Case<tensor::FromElementsOp>([&](tensor::FromElementsOp e) -> LogicalResult {
        if (!onlyReshapeShape(e.getResult()))
          return e.emitError("CUDA emitter: 'tensor.from_elements' is supported as the shape of a "
                             "reshape only");
        return success();
      })
      .Case<arith::IndexCastOp, arith::DivUIOp, arith::DivSIOp, arith::AddIOp, arith::SubIOp>(
          [&](Operation *o) -> LogicalResult {
            if (isa<ShapedType>(o->getResult(0).getType()))
              return o->emitError("CUDA emitter: '")
                     << o->getName() << "' on tensors is not supported";
            return success(); // a dynamic size: read through sizeOf
          })
      .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp>([&](Operation *r) {
        tensors[r->getResult(0)] = tensors.lookup(r->getOperand(0));
        return success();
      })
      .Case<linalg::GenericOp>([&](linalg::GenericOp g) -> LogicalResult {
        auto it = groups.find(g);
        if (it != groups.end())
          return emitRowGroup(it->second.members, it->second.rows, it->second.length);
        if (grouped.contains(g) || absorbed.contains(g))
          return success();
        if (isGemmWeightByteView(g)) { // the GEMM reads the words as bytes
          tensors[g.getResult(0)] = tensors.lookup(g.getDpsInputs()[0]);
          return success();
        }
        return emitGeneric(g);
      })
      .Case<linalg::TransposeOp>([&](linalg::TransposeOp t) { return emitTranspose(t); })
      .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp s) { return emitExtractSlice(s); })
      .Case<tensor::InsertSliceOp>([&](tensor::InsertSliceOp s) { return emitInsertSlice(s); })
      .Case<linalg::MatmulOp, linalg::BatchMatmulOp>(
          [&](auto m) { return emitGemm(m, /*transB=*/false); })
      .Case<linalg::MatmulTransposeBOp, linalg::BatchMatmulTransposeBOp>(
          [&](auto m) { return emitGemm(m, /*transB=*/true); })
      .Case<func::ReturnOp>([&](func::ReturnOp ret) -> LogicalResult {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          TensorInfo info = tensors.lookup(v);
          info.buffer = materialize(v);
          if (info.buffer < 0)
            return ret.emitError("CUDA emitter: result #")
                   << i
                   << " is not produced by a kernel (a constant result, or one of an op "
                      "the emitter could not translate)";
          Buffer &b = buffers[info.buffer];
          std::string role = "result " + std::to_string(i);
          b.role = b.role == "temporary" ? role : b.role + ", " + role;
          auto tt = cast<RankedTensorType>(v.getType());
          FailureOr<SymShape> dims = shapeOf(v);
          if (failed(dims))
            return failure();
          fplan.results.push_back(b.name);
          fplan.resultShapes.emplace_back(tt.getShape().begin(), tt.getShape().end());
          for (int64_t &d : fplan.resultShapes.back())
            d = ShapedType::isDynamic(d) ? -1 : d;
          fplan.resultDims.emplace_back();
          for (const SymSize &d : *dims)
            fplan.resultDims.back().push_back(d.str());
          fplan.resultTypes.push_back(*storageType(tt.getElementType()));
        }
        return success();
      })
      .Default([&](Operation *o) -> LogicalResult {
        if (o->getName().getStringRef() == "affine.apply")
          return success(); // a dynamic size: read through sizeOf
        return o->emitError("CUDA emitter: '") << o->getName() << "' is not supported yet";
      });
}

void FunctionEmitter::print(llvm::raw_ostream &dst) {
  std::string fname = func.getSymName().str();
  size_t numKernels = llvm::count_if(
      fplan.steps, [](const LaunchStep &st) { return st.kind == LaunchStep::Kernel; });
  dst << "//===-- func @" << fname << ": " << numKernels << " kernel(s)";
  if (numKernels != fplan.steps.size())
    dst << ", " << fplan.steps.size() - numKernels << " other step(s)";
  dst << " --===//\n";
  if (!fplan.symbols.empty()) {
    dst << "// Symbols (kernel arguments, read from the inputs per call):";
    for (auto [k, sym] : llvm::enumerate(fplan.symbols))
      dst << (k ? ", s" : " s") << k << " = arg" << sym.first << ".shape[" << sym.second << "]";
    dst << "\n";
    for (const auto &[a, b] : fplan.constraints)
      dst << "// Requires " << a << " == " << b << "\n";
    for (const auto &[a, b] : fplan.bounds)
      dst << "// Requires " << a << " <= " << b << "\n";
  }
  dst << "// Buffers (contiguous, row-major):\n";
  for (Buffer &b : buffers) {
    Type elt = b.type.getElementType();
    std::string shape =
        llvm::join(llvm::map_range(b.dims, [](const SymSize &d) { return d.paren(); }), "x");
    if (shape.empty())
      shape = "scalar";
    SymSize bytes = product(b.dims) * SymSize(byteWidth(elt));
    dst << "//   " << b.name << ": " << *storageType(elt) << "[" << shape << "], " << bytes.str()
        << " bytes, " << b.role << "\n";
    BufferInfo info;
    info.name = fname + "." + b.name;
    info.function = fname;
    info.elementType = *storageType(elt);
    info.shape.assign(b.type.getShape().begin(), b.type.getShape().end());
    for (int64_t &d : info.shape)
      d = ShapedType::isDynamic(d) ? -1 : d;
    info.bytes = bytes.isStatic() ? bytes.value() : 0;
    for (const SymSize &d : b.dims)
      info.dims.push_back(d.str());
    info.role = b.role;
    out.buffers.push_back(std::move(info));
  }
  dst << "// Launches, in order (grid, block):\n";
  for (const std::string &p : plan)
    dst << "//   " << p << "\n";
  dst << "\n";
  os.flush();
  dst << text;
  out.functions.push_back(fplan);
}

} // namespace detail

static const char *kPreamble = R"cuda(

// NaN-propagating max/min (arith.maximumf/minimumf, torch.maximum/relu).
__device__ __forceinline__ float kiln_maximum(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}
__device__ __forceinline__ float kiln_minimum(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
}
__device__ __forceinline__ double kiln_maximum(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000LL) : fmax(a, b);
}
__device__ __forceinline__ double kiln_minimum(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000LL) : fmin(a, b);
}
// NaN-ignoring max/min (arith.maxnumf/minnumf) and integer max/min.
__device__ __forceinline__ float kiln_maxnum(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ float kiln_minnum(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double kiln_maxnum(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ double kiln_minnum(double a, double b) { return fmin(a, b); }
template <typename T> __device__ __forceinline__ T kiln_maxnum(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T kiln_minnum(T a, T b) { return a < b ? a : b; }

// Reduction combiners.
struct kiln_add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct kiln_mul { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct kiln_maximum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_maximum(a, b); } };
struct kiln_minimum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_minimum(a, b); } };
struct kiln_maxnum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_maxnum(a, b); } };
struct kiln_minnum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_minnum(a, b); } };
// any()/all(): a bool's warp shuffle comes back as an int, hence two types.
struct kiln_or { template <typename T, typename U> __device__ T operator()(T a, U b) const { return a | b; } };
struct kiln_and { template <typename T, typename U> __device__ T operator()(T a, U b) const { return a & b; } };

// Block-wide reduction (blockDim.x a multiple of 32, at most 1024): warp
// shuffles, one partial per warp in shared memory, warp 0 reduces those.
// The result is valid in thread 0. Ends with a barrier so `partials` can be
// reused by the next row.
template <typename T, typename Op>
__device__ __forceinline__ T kiln_block_reduce(T v, T *partials, Op op, T identity) {
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    partials[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? partials[lane] : identity;
    for (int o = 16; o > 0; o >>= 1)
      v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  __syncthreads();
  return v;
}

// One-pass row statistics (codegen/cuda/CudaOnePass.cpp): per-thread state
// arrays merged across the block field by field.
__device__ __forceinline__ float kiln_neg_inf(float) { return __int_as_float((int)0xff800000u); }
__device__ __forceinline__ double kiln_neg_inf(double) { return __longlong_as_double((long long)0xfff0000000000000ULL); }
__device__ __forceinline__ float kiln_exp(float x) { return expf(x); }
__device__ __forceinline__ double kiln_exp(double x) { return exp(x); }
// Online softmax: st = {running max m, sum of exp(x - m)}; the sum is
// rescaled by exp(m_old - m_new) when the max grows. While only -inf has
// been seen the state stays (-inf, 0) (no exp(-inf - -inf) = NaN); NaN and
// +inf propagate as in max-then-sum.
template <typename T> __device__ __forceinline__ void kiln_online_add(T (&st)[2], T x) {
  const T m = kiln_maximum(st[0], x);
  if (m == kiln_neg_inf(m))
    return;
  st[1] = st[1] * kiln_exp(st[0] - m) + kiln_exp(x - m);
  st[0] = m;
}
struct kiln_online_merge {
  template <typename T> __device__ void operator()(T (&a)[2], const T (&b)[2]) const {
    const T m = kiln_maximum(a[0], b[0]);
    if (m == kiln_neg_inf(m))
      return;
    a[1] = a[1] * kiln_exp(a[0] - m) + b[1] * kiln_exp(b[0] - m);
    a[0] = m;
  }
  template <typename T> __device__ static void identity(T (&a)[2]) { a[0] = kiln_neg_inf(a[0]); a[1] = T(0); }
};
// Welford: st = {count, mean, M2 = sum of squared deviations}; blocks of
// the row merge with Chan et al.'s rule.
template <typename T> __device__ __forceinline__ void kiln_welford_add(T (&st)[3], T x) {
  st[0] += T(1);
  const T d = x - st[1];
  st[1] += d / st[0];
  st[2] += d * (x - st[1]);
}
struct kiln_welford_merge {
  template <typename T> __device__ void operator()(T (&a)[3], const T (&b)[3]) const {
    if (b[0] == T(0))
      return;
    if (a[0] == T(0)) {
      a[0] = b[0]; a[1] = b[1]; a[2] = b[2];
      return;
    }
    const T n = a[0] + b[0], d = b[1] - a[1], w = b[0] / n;
    a[1] += d * w;
    a[2] += b[2] + d * d * a[0] * w;
    a[0] = n;
  }
  template <typename T> __device__ static void identity(T (&a)[3]) { a[0] = a[1] = a[2] = T(0); }
};
// kiln_block_reduce for an N-field state: the merged state is valid in
// thread 0; ends with a barrier.
template <int N, typename T, typename Merge>
__device__ __forceinline__ void kiln_block_merge(T (&v)[N], T (*partials)[N], Merge merge) {
  for (int o = 16; o > 0; o >>= 1) {
    T w[N];
    for (int k = 0; k < N; ++k)
      w[k] = __shfl_xor_sync(0xffffffffu, v[k], o);
    merge(v, w);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    for (int k = 0; k < N; ++k)
      partials[warp][k] = v[k];
  __syncthreads();
  if (warp == 0) {
    if (lane < (int)(blockDim.x >> 5))
      for (int k = 0; k < N; ++k)
        v[k] = partials[lane][k];
    else
      Merge::identity(v);
    for (int o = 16; o > 0; o >>= 1) {
      T w[N];
      for (int k = 0; k < N; ++k)
        w[k] = __shfl_xor_sync(0xffffffffu, v[k], o);
      merge(v, w);
    }
  }
  __syncthreads();
}

)cuda";

FailureOr<CudaModule> emitCuda(ModuleOp module, const EmitOptions &options) {
  CudaModule result;
  bool failed_ = false;
  // Collecting: the emitter's errors become UnsupportedOp reasons instead
  // of diagnostics (other severities pass through).
  std::string lastError;
  std::optional<ScopedDiagnosticHandler> collect;
  if (options.collectUnsupported)
    collect.emplace(module.getContext(), [&](Diagnostic &d) -> LogicalResult {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      lastError = d.str();
      return success();
    });
  std::string kernels;
  llvm::raw_string_ostream os(kernels);
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    // Every function is tried so that all unsupported ops are reported.
    FunctionEmitter fe(func, result, options, options.collectUnsupported ? &lastError : nullptr);
    size_t kernelMark = result.kernels.size(), externMark = result.externs.size();
    if (failed(fe.emit())) {
      if (options.collectUnsupported) {
        // Nothing of this function is printed: drop what it had recorded,
        // except the ops it could not translate (often why it failed: a
        // result whose op is unsupported has no buffer to return).
        result.kernels.resize(kernelMark);
        result.externs.resize(externMark);
        // The function itself (its signature) is unsupported: report it.
        UnsupportedOp u;
        u.function = func.getSymName().str();
        u.op = "func.func";
        u.location = locationString(func.getLoc());
        u.reason = lastError.empty() ? "(no diagnostic)" : lastError;
        lastError.clear();
        result.unsupported.push_back(std::move(u));
        continue;
      }
      failed_ = true;
      continue;
    }
    fe.print(os);
  }
  if (failed_)
    return failure();
  os.flush();
  // Half-precision headers only when used (they are the slow part of NVRTC).
  bool half = kernels.find("__half") != std::string::npos;
  bool bf16 = kernels.find("__nv_bfloat16") != std::string::npos;
  bool fp8 = kernels.find("__nv_fp8_e4m3") != std::string::npos;
  result.source = "// Generated by kiln's CUDA emitter (codegen/cuda). Compile with NVRTC.\n";
  if (half)
    result.source += "#include <cuda_fp16.h>\n";
  if (bf16)
    result.source += "#include <cuda_bf16.h>\n";
  if (fp8)
    result.source += "#include <cuda_fp8.h>\n";
  result.source += kPreamble;
  result.source += kernels;
  return result;
}

} // namespace mlir::kiln::cuda
