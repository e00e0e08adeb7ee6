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

#include "codegen/Passes.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::kiln::cuda {

using namespace detail;

void buildCudaPreparePipeline(OpPassManager &pm) {
  buildOptimizePipeline(pm);
  buildFusedLinalgPipeline(pm);
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

int FunctionEmitter::newBuffer(RankedTensorType t, std::string role, std::string name) {
  if (name.empty())
    name = "buf" + std::to_string(tempCount++);
  buffers.push_back({name, t, role});
  return int(buffers.size()) - 1;
}

std::string FunctionEmitter::nextKernelName() {
  return func.getSymName().str() + "_k" + std::to_string(kernelCount++);
}

void FunctionEmitter::openKernel(const KernelInfo &k, ArrayRef<std::string> params) {
  os << "extern \"C\" __global__ void __launch_bounds__(" << k.blockX << ") " << k.name
     << "(" << llvm::join(params, ", ") << ") {\n";
}

void FunctionEmitter::addKernel(KernelInfo k) {
  plan.push_back(k.name + "<<<" + std::to_string(k.gridX) + ", " + std::to_string(k.blockX) +
                 ">>>(" + llvm::join(k.args, ", ") + ")");
  out.kernels.push_back(std::move(k));
}

LogicalResult FunctionEmitter::emit() {
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto tt = dyn_cast<RankedTensorType>(arg.getType());
    if (!tt || !tt.hasStaticShape() || !storageType(tt.getElementType()))
      return func.emitError("CUDA emitter: argument #")
             << i << " must be a static tensor of a supported element type, got "
             << arg.getType();
    tensors[arg] = TensorInfo{newBuffer(tt, "input " + std::to_string(i),
                                        "arg" + std::to_string(i)),
                              std::nullopt, false};
  }
  if (fuseRows)
    planRowGroups();
  for (Operation &op : func.getBody().front()) {
    LogicalResult r =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> LogicalResult {
              if (isa<RankedTensorType>(c.getType())) {
                auto dense = dyn_cast<SplatElementsAttr>(c.getValue());
                if (dense)
                  if (auto lit = attrLiteral(dense.getSplatValue<TypedAttr>()))
                    tensors[c.getResult()] = TensorInfo{-1, *lit, false};
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
            .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp>([&](Operation *r) {
              tensors[r->getResult(0)] = tensors.lookup(r->getOperand(0));
              return success();
            })
            .Case<linalg::GenericOp>([&](linalg::GenericOp g) -> LogicalResult {
              auto it = groups.find(g);
              if (it != groups.end())
                return emitRowGroup(it->second.members, it->second.rows, it->second.length);
              if (grouped.contains(g))
                return success();
              return emitGeneric(g);
            })
            .Case<func::ReturnOp>([&](func::ReturnOp ret) -> LogicalResult {
              for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
                TensorInfo info = tensors.lookup(v);
                if (info.buffer < 0)
                  return ret.emitError("CUDA emitter: result #")
                         << i << " is not produced by a kernel (constant results "
                                 "are not supported yet)";
                Buffer &b = buffers[info.buffer];
                std::string role = "result " + std::to_string(i);
                b.role = b.role == "temporary" ? role : b.role + ", " + role;
              }
              return success();
            })
            .Default([&](Operation *o) {
              return o->emitError("CUDA emitter: '")
                     << o->getName() << "' is not supported yet";
            });
    if (failed(r))
      return failure();
  }
  return success();
}

void FunctionEmitter::print(llvm::raw_ostream &dst) {
  std::string fname = func.getSymName().str();
  dst << "//===-- func @" << fname << ": " << plan.size() << " kernel(s) --===//\n";
  dst << "// Buffers (contiguous, row-major):\n";
  for (Buffer &b : buffers) {
    Type elt = b.type.getElementType();
    std::string shape = llvm::join(
        llvm::map_range(b.type.getShape(), [](int64_t d) { return std::to_string(d); }), "x");
    if (shape.empty())
      shape = "scalar";
    dst << "//   " << b.name << ": " << *storageType(elt) << "[" << shape << "], "
        << b.type.getNumElements() * byteWidth(elt) << " bytes, " << b.role << "\n";
    BufferInfo info;
    info.name = fname + "." + b.name;
    info.elementType = *storageType(elt);
    info.shape.assign(b.type.getShape().begin(), b.type.getShape().end());
    info.bytes = b.type.getNumElements() * byteWidth(elt);
    info.role = b.role;
    out.buffers.push_back(std::move(info));
  }
  dst << "// Launches, in order (grid, block):\n";
  for (const std::string &p : plan)
    dst << "//   " << p << "\n";
  dst << "\n";
  os.flush();
  dst << text;
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

)cuda";

FailureOr<CudaModule> emitCuda(ModuleOp module, const EmitOptions &options) {
  CudaModule result;
  bool failed_ = false;
  std::string kernels;
  llvm::raw_string_ostream os(kernels);
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    // Every function is tried so that all unsupported ops are reported.
    FunctionEmitter fe(func, result, options.fuseRows);
    if (failed(fe.emit())) {
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
  result.source = "// Generated by kiln's CUDA emitter (codegen/cuda). Compile with NVRTC.\n";
  if (half)
    result.source += "#include <cuda_fp16.h>\n";
  if (bf16)
    result.source += "#include <cuda_bf16.h>\n";
  result.source += kPreamble;
  result.source += kernels;
  return result;
}

} // namespace mlir::kiln::cuda
