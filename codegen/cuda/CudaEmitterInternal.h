//===- CudaEmitterInternal.h - shared state of the CUDA emitter ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to codegen/cuda: what the emitter's translation units share. The
// scalar type and literal helpers, the reduction combiners, the launch
// constants, and FunctionEmitter (the per-func.func buffer assignment and
// kernel printer) whose methods are spread over CudaEmitter.cpp (driver
// glue and launch plan), CudaExpressions.cpp (body ops → C expressions,
// operand addressing), CudaKernels.cpp (one kernel per generic: pointwise
// or row reduction) and CudaRowGroups.cpp (fused row groups).
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_CUDAEMITTERINTERNAL_H
#define KILN_CODEGEN_CUDA_CUDAEMITTERINTERNAL_H

#include "codegen/cuda/CudaEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::kiln::cuda::detail {

inline constexpr int64_t kPointwiseBlock = 256;
inline constexpr int64_t kMaxPointwiseGrid = 4096;
inline constexpr int64_t kMaxGrid = 65535;

//===----------------------------------------------------------------------===//
// Types and literals (CudaExpressions.cpp)
//===----------------------------------------------------------------------===//

/// Storage type of a tensor element in memory.
std::optional<std::string> storageType(Type t);
/// Type of a scalar in the kernel body: f16/bf16/f32 all compute in float.
std::optional<std::string> valueType(Type t);
int64_t byteWidth(Type t);
std::string floatLiteral(double v, bool isDouble);
std::optional<std::string> attrLiteral(TypedAttr attr);

//===----------------------------------------------------------------------===//
// Reduction combiners (CudaExpressions.cpp)
//===----------------------------------------------------------------------===//

struct Combiner {
  const char *functor;  // kiln_* functor in the preamble
  const char *identity; // identity literal kind: "0", "1", "-inf", "+inf", "min", "max"
};

std::optional<Combiner> combinerOf(Operation *op);
std::string identityLiteral(const Combiner &c, Type t);
/// The value stored by a reduction: `acc`, combined with the init first
/// unless the init is the combiner's identity `id`.
std::string combineWithInit(const Combiner &c, const std::string &init, const std::string &id);

/// A translated reduction body `yield combine(x, %out)`: the combiner and
/// the C expression of `x` (the per-element partial).
struct ReductionBody {
  Combiner combiner;
  std::string partial;
};

//===----------------------------------------------------------------------===//
// Symbolic sizes (CudaSymbolic.cpp)
//===----------------------------------------------------------------------===//

/// A dim size or offset: a polynomial in the symbols `s<k>` (the dynamic
/// dims of the function's arguments, FunctionPlan::symbols) with integer
/// coefficients — products from reshapes, sums from concats and `past + n`
/// sizes. Kernels of a function with symbols take them as `long long s<k>`
/// parameters; the executors evaluate the text per call.
struct SymSize {
  /// (sorted symbol indices, repeats allowed; coefficient): canonical form,
  /// sorted by monomial, no zero coefficients; the empty monomial is the
  /// constant term.
  using Monomial = SmallVector<unsigned, 2>;
  SmallVector<std::pair<Monomial, int64_t>, 1> terms;

  SymSize() : SymSize(1) {}
  SymSize(int64_t c);
  static SymSize symbol(unsigned k);
  bool isStatic() const { return terms.empty() || (terms.size() == 1 && terms[0].first.empty()); }
  /// The value of a static size (0 for the zero polynomial).
  int64_t value() const { return terms.empty() ? 0 : terms[0].second; }
  bool isOne() const { return isStatic() && value() == 1; }
  /// Every coefficient >= 0: the size is >= 0 for any (non-negative) sizes.
  bool isNonNegative() const;
  /// `128`, `s0`, `s0 * s1 * 4`, `s0 + 1`, `s0 * 2 - 3`.
  std::string str() const;
  /// str(), parenthesized unless it is one symbol or one number (for `/`,
  /// `%` and `*`).
  std::string paren() const;
  SymSize operator*(const SymSize &o) const;
  SymSize operator+(const SymSize &o) const;
  SymSize operator-(const SymSize &o) const;
  /// The exact quotient (`s0 * 32 / 8` = `s0 * 4`, `(s0 + 1) * 2 / 2`), or
  /// nullopt when `o` does not divide every term (or is not one term).
  std::optional<SymSize> dividedBy(const SymSize &o) const;
  bool operator==(const SymSize &o) const { return terms == o.terms; }
  bool operator!=(const SymSize &o) const { return !(*this == o); }

private:
  void canonicalize();
};
using SymShape = SmallVector<SymSize, 4>;
SymShape staticShape(ArrayRef<int64_t> shape);
SymSize product(ArrayRef<SymSize> dims);
/// The row-major strides of `shape` (in elements).
SmallVector<SymSize> rowMajorStrides(ArrayRef<SymSize> shape);
bool isStatic(ArrayRef<SymSize> dims);

/// Loop indices of a row-major linear index `var` over `dims`: the C
/// expression of each (`0` for a size-1 dim).
SmallVector<std::string> decodeLinearIndex(const std::string &var, ArrayRef<int64_t> dims);
SmallVector<std::string> decodeLinearIndex(const std::string &var, ArrayRef<SymSize> dims);

/// `loc` as printed in kernel comments.
std::string locationString(Location loc);

/// Whether `op` is the argmax (true) / argmin (false) generic of kiln's
/// lowering over its innermost dim (CudaArgReductions.cpp); nullopt if not.
std::optional<bool> rowArgReduction(linalg::GenericOp op);

//===----------------------------------------------------------------------===//
// One-pass row statistics (CudaOnePass.cpp)
//===----------------------------------------------------------------------===//

/// The part a row-group member plays in a one-pass statistics loop.
struct OnePassRole {
  enum Kind { None, SoftmaxLead, WelfordLead, Partner } kind = None;
  /// Lead: the partner's member index; Partner: the lead's.
  size_t other = 0;
  /// Welford: the member computing the mean; softmax: the member whose
  /// value the exponent subtracts (the lead, or a per-row shift after it).
  size_t mean = 0;
};

/// Pairs of row reductions of a row group that can share one read of the
/// row: max then sum(exp(x - max)) (online softmax), sum then
/// sum((x - sum / N)^2) (Welford). `isReduce[i]`: member i is a row reduction.
SmallVector<OnePassRole> planOnePass(ArrayRef<linalg::GenericOp> members, size_t numRowDims,
                                     int64_t length, ArrayRef<bool> isReduce);

/// A row group's kernel and one member of it while they are printed
/// (CudaRowGroups.cpp).
struct RowGroupKernel;
struct RowMember;

/// Prints the statistics block of a lead and its partner: registers
/// r<lead>, r<partner> (broadcast through s_r<lead>, s_r<partner>),
/// `loopBody` (dims, loads, body of the lead) per column, `partial` the
/// lead's per-element value, `leadStore` run by thread 0 after s_r<lead>
/// is set. Shared `partials<lead>[32][n]` must be declared by the caller.
void printOnePassStats(llvm::raw_ostream &b, const OnePassRole &role, unsigned lead,
                       const std::string &vt, const std::string &ity, int64_t length,
                       const std::string &loopBody, const std::string &partial,
                       const std::string &leadStore);

//===----------------------------------------------------------------------===//
// Function emitter
//===----------------------------------------------------------------------===//

/// A tensor operand of a pointwise kernel, for the vectorized form
/// (CudaVectorize.cpp): inputs first, then outputs.
struct GenericKernelParts;

struct PointwiseOperand {
  std::string param; // in<k> / out<k>
  std::string name;  // inputs: the body's name a<i>
  AffineMap map;
  RankedTensorType type;
  bool isOutput = false;
  std::string value; // outputs: the C expression stored
};

struct Buffer {
  std::string name;
  RankedTensorType type; // the buffer's own (first) shape
  std::string role;
  SymShape dims; // the shape with dynamic dims as symbol products
};

/// A tensor value as the emitter sees it.
struct TensorInfo {
  int buffer = -1;                 // index into buffers
  std::optional<std::string> fill; // linalg.fill value (literal)
  bool empty = false;              // tensor.empty (shape only)
};

class FunctionEmitter {
public:
  /// `lastError` (non-null with EmitOptions::collectUnsupported) receives
  /// the message of each diagnostic the emitter reports.
  FunctionEmitter(func::FuncOp func, CudaModule &out, const EmitOptions &options,
                  std::string *lastError = nullptr)
      : func(func), os(text), out(out), fuseRows(options.fuseRows),
        onePassRows(options.onePassRows), vectorize(options.vectorize),
        gemmEpilogues(options.gemmEpilogues), lastError(lastError) {}

  LogicalResult emit();
  /// The function's launch plan (a comment) followed by its kernels.
  void print(llvm::raw_ostream &dst);

private:
  /// Emits one op of the function body (dispatch on its kind).
  LogicalResult emitOp(Operation &op);
  /// emitOp with roll-back: on failure the partial text, kernels, plan and
  /// buffers are dropped and, when collecting, the op is recorded as
  /// unsupported (a failed row group is retried member by member).
  LogicalResult emitOrCollect(Operation &op);
  void recordUnsupported(Operation *op);
  // CudaExtern.cpp
  LogicalResult emitGemm(linalg::LinalgOp op, bool transB);
  // CudaKernels.cpp
  LogicalResult emitGeneric(linalg::GenericOp op);
  /// emitGeneric's steps: input parameters and loads; output buffers and
  /// parameters; stores (and the dims the kernel decodes); the kernel text.
  LogicalResult collectGenericInputs(linalg::GenericOp op, GenericKernelParts &parts);
  LogicalResult collectGenericOutputs(linalg::GenericOp op, GenericKernelParts &parts);
  LogicalResult collectGenericStores(linalg::GenericOp op, GenericKernelParts &parts);
  void printPointwiseKernel(linalg::GenericOp op, KernelInfo &k, const GenericKernelParts &parts);
  void printRowReductionKernel(linalg::GenericOp op, KernelInfo &k,
                               const GenericKernelParts &parts);
  // CudaVectorize.cpp
  /// Elements per thread of the vectorized form of a pointwise kernel
  /// (16 bytes of the widest vector operand), 1 when it does not apply.
  int64_t vectorWidth(ArrayRef<PointwiseOperand> operands, ArrayRef<int64_t> ranges, int64_t total);
  /// Prints the vector loop: V elements per iteration `vi` from `start` by
  /// `stride`, 128-bit loads/stores, `body` (the scalar loop's) per lane.
  void printVectorLoop(llvm::raw_ostream &o, ArrayRef<PointwiseOperand> operands,
                       ArrayRef<int64_t> ranges, int64_t v, const std::string &ity,
                       const std::string &start, const std::string &stride,
                       const std::string &body);
  // CudaReductions.cpp
  /// Any other single-output reduction (several reduced dims, or not the
  /// innermost one): one thread per output element, serial loops.
  LogicalResult emitSerialReduction(linalg::GenericOp op);
  /// A reduction with several outputs (argmax/argmin: the extreme value and
  /// its index): one thread per output element, the accumulators start
  /// from the inits' fills and take the body's yields element by element,
  /// in the generic's order (so the first extreme wins, as in torch).
  LogicalResult emitSequentialReduction(linalg::GenericOp op);
  /// The block-parallel body of a row argmax/argmin kernel
  /// (CudaArgReductions.cpp): one block per row, `accs` (the accumulators'
  /// declarations), each thread's strided loop around `inner`, the (value,
  /// index) tree merge, `stores` by thread 0; sets `k`'s launch config.
  void printRowArgReduction(KernelInfo &k, bool isMax, ArrayRef<int64_t> ranges,
                            const std::string &ity, const llvm::SmallBitVector &usedDims,
                            const std::string &valueType, const std::string &accs,
                            const std::string &inner, const std::string &stores);
  /// The inputs of a serial reduction: kernel parameters and loads at
  /// indent `in` (scalars and fills by value).
  LogicalResult loadSerialInputs(linalg::GenericOp op, ArrayRef<SymSize> ranges,
                                 const std::string &in, std::vector<std::string> &params,
                                 std::vector<std::string> &args, std::string &loads,
                                 llvm::SmallBitVector &usedDims);
  /// The loops of a serial reduction: a grid-stride loop over the outputs
  /// (decoding the parallel dims it uses), `prologue`, the reduced dims'
  /// loops around `inner`, then `epilogue` (the stores); closes the kernel.
  void printSerialLoops(const std::string &ity, bool wide, const SymSize &outputs,
                        ArrayRef<SymSize> parallelRanges, ArrayRef<unsigned> parallelDims,
                        ArrayRef<unsigned> reducedDims, ArrayRef<SymSize> ranges,
                        const llvm::SmallBitVector &usedDims, const llvm::SmallBitVector &outDims,
                        const std::string &prologue, const std::string &inner,
                        const std::string &epilogue);
  // CudaCopies.cpp
  /// linalg.transpose: a pointwise kernel over the output reading the
  /// input through the permutation.
  LogicalResult emitTranspose(linalg::TransposeOp op);
  // CudaSlices.cpp
  /// tensor.extract_slice: a strided copy into a fresh contiguous buffer
  /// (a slice of a splat constant stays that constant).
  LogicalResult emitExtractSlice(tensor::ExtractSliceOp op);
  /// tensor.insert_slice (concat, padding): the source copied into the
  /// destination's region, in place when the destination is a buffer this
  /// chain owns and nothing else reads it, else into a copy of it.
  LogicalResult emitInsertSlice(tensor::InsertSliceOp op);
  /// A copy kernel over `shape`: out[dst] = in[src] (or = `literal` when
  /// `src` < 0); each side addressed as offset + sum(d_k * stride_k).
  /// Sizes may be symbolic: the kernel then takes the symbols.
  void printStridedCopy(int src, const std::string &literal, const SymSize &srcOffset,
                        ArrayRef<SymSize> srcStrides, int dst, const SymSize &dstOffset,
                        ArrayRef<SymSize> dstStrides, ArrayRef<SymSize> shape, Type elt,
                        const std::string &what, Location loc);
  /// Offsets and strides of a slice (CudaSlices.cpp).
  LogicalResult sliceLayout(Operation *op, ArrayRef<OpFoldResult> offsets,
                            ArrayRef<OpFoldResult> sizes, ArrayRef<int64_t> steps,
                            ArrayRef<SymSize> full, bool insert, function_ref<bool(int64_t)> keep,
                            SymSize &offset, SmallVector<SymSize> &strides);
  /// A fresh buffer of type `t` holding a copy of tensor `v` (a buffer or a
  /// fill), for insert_slice destinations that cannot be written in place.
  int copyToFreshBuffer(Value v, RankedTensorType t, Location loc);
  /// `tensor.extract %t[...]` in a generic body (embedding, gather): `t`
  /// becomes a kernel parameter of the kernel being built (`gathers`).
  std::optional<std::string> translateExtract(tensor::ExtractOp op);
  /// A non-splat constant tensor (upsampling's index tables): a
  /// `__device__` array in the source copied into a buffer by one kernel.
  LogicalResult emitConstantTable(arith::ConstantOp c);
  /// The buffer of tensor `v`; a splat constant or linalg.fill without one
  /// gets it from a fill kernel emitted here (-1 if `v` has neither).
  int materialize(Value v);
  // CudaRowGroups.cpp
  /// One kernel for a row group (planRowGroups): one block per row, each
  /// member printed in order into the row loop.
  LogicalResult emitRowGroup(ArrayRef<linalg::GenericOp> group, ArrayRef<int64_t> rowShape,
                             int64_t rowLength);
  /// Member `index` of the group: loads, body, output, then its text by
  /// kind (one-pass statistics, row reduction, per-row or full-row).
  LogicalResult emitRowMember(RowGroupKernel &k, unsigned index, ArrayRef<OnePassRole> roles);
  /// The loads of a member's inputs: per-row values of earlier members,
  /// scalars and fills by value, buffers as kernel parameters.
  LogicalResult loadRowMemberInputs(RowGroupKernel &k, RowMember &m);
  /// The member's body (a reduction's without its combiner).
  LogicalResult translateRowMemberBody(RowMember &m);
  /// An output buffer and parameter when the member's result is used
  /// outside the group (always for full rows).
  LogicalResult planRowMemberOutput(RowGroupKernel &k, RowMember &m);
  /// A row reduction: a strided loop, a block reduction, the value shared
  /// through shared memory; `storeText` stores it when needed.
  LogicalResult printRowReduction(RowGroupKernel &k, RowMember &m, unsigned index,
                                  const std::string &storeText);
  /// A per-row pointwise member (every thread computes the row's value)
  /// or a full-row one (a strided loop storing each element).
  LogicalResult printPointwiseRowMember(RowGroupKernel &k, RowMember &m);
  void planRowGroups();
  // CudaExpressions.cpp
  LogicalResult translateBody(linalg::GenericOp op, Operation *skip, llvm::raw_ostream &body,
                              const std::string &indent);
  /// translateBody for a single-output reduction generic, leaving out the
  /// combiner (applied to `acc` by the caller); reports at `op` when the
  /// body is not `yield combine(f(inputs), %out)` with a known combiner.
  FailureOr<ReductionBody> translateReductionBody(linalg::GenericOp op, llvm::raw_ostream &body,
                                                  const std::string &indent);
  std::optional<std::string> scalarOf(Value v, Operation *user);
  std::string offsetExpr(AffineMap map, RankedTensorType type, ArrayRef<int64_t> loopRanges,
                         bool linearOk, const std::string &linear, llvm::SmallBitVector &usedDims);
  std::string offsetExpr(AffineMap map, ArrayRef<SymSize> shape, ArrayRef<SymSize> loopRanges,
                         bool linearOk, const std::string &linear, llvm::SmallBitVector &usedDims);
  // CudaSymbolic.cpp
  /// The shape of tensor `v` with each dynamic dim traced to the
  /// arguments' symbols (tensor.empty sizes, tensor.dim, products, reshapes,
  /// destination operands); an error at the op that cannot be traced.
  FailureOr<SymShape> shapeOf(Value v);
  /// An index value as a symbol product (constants, tensor.dim, muli,
  /// affine.apply of products).
  FailureOr<SymSize> sizeOf(Value v, Operation *user);
  /// sizeOf of a static attribute or a value (mixed offsets and sizes).
  FailureOr<SymSize> sizeOf(OpFoldResult v, Operation *user);
  /// Records that `a` and `b` must be equal at run time (FunctionPlan::
  /// constraints, checked per call) unless they are the same product.
  void requireEqual(const SymSize &a, const SymSize &b);
  /// Records that `a <= b` must hold at run time (FunctionPlan::bounds)
  /// unless `b - a` is non-negative for any sizes.
  void requireAtMost(const SymSize &a, const SymSize &b);
  /// The generic's loop ranges (a static size wherever an operand has one).
  FailureOr<SymShape> loopRangesOf(linalg::GenericOp op);
  /// Whether `op` has tensors with dynamic dims the emitter cannot handle
  /// (only pointwise and row-reduction generics, their shape ops and the
  /// return take them): the error then names the op.
  LogicalResult checkDynamicSupported(Operation &op);
  /// `long long s<k>` parameters of a kernel over symbolic sizes.
  std::vector<std::string> symbolParams() const;
  std::string loadExpr(const std::string &ptr, const std::string &off, Type elt);
  std::string storeValue(const std::string &v, Type elt);
  // CudaEmitter.cpp
  /// `<func>_k<N>` for the next kernel.
  std::string nextKernelName();
  int newBuffer(RankedTensorType t, std::string role, std::string name = "", SymShape dims = {});
  /// Prints the signature line of kernel `k` (launch bounds, parameters).
  void openKernel(const KernelInfo &k, ArrayRef<std::string> params);
  /// Records `k` in the launch plan and the module's kernel list.
  void addKernel(KernelInfo k);
  /// Records `e` in the launch plan and the module's extern list.
  void addExtern(ExternCall e);

  func::FuncOp func;
  std::string text;
  llvm::raw_string_ostream os;
  CudaModule &out;
  llvm::DenseMap<Value, TensorInfo> tensors;
  /// Shapes of values with dynamic dims (shapeOf's memo; arguments first).
  llvm::DenseMap<Value, SymShape> symShapes;
  llvm::DenseMap<Value, std::string> names; // body values → C expressions
  std::vector<Buffer> buffers;
  std::vector<std::string> plan;
  int kernelCount = 0;
  int gemmCount = 0;
  int tempCount = 0;
  bool fuseRows;
  bool onePassRows;
  bool vectorize;
  bool gemmEpilogues;
  /// Tensors read by tensor.extract in the body of the kernel being built:
  /// extra parameters (non-null only while a kernel accepts them).
  struct Gathers {
    std::vector<std::string> params, args;
    llvm::DenseMap<int, std::string> paramOfBuffer;
  };
  Gathers *gathers = nullptr;
  /// Slices whose only use is inserting them (im2col taps): read by the
  /// insert's copy kernel straight from the source (buffer, offset, strides).
  struct SliceView {
    int buffer;
    SymSize offset;
    SmallVector<SymSize> strides;
  };
  llvm::DenseMap<Value, SliceView> sliceViews;
  /// Buffers created for an insert_slice chain: written in place by the
  /// next insert_slice when its destination has no other use.
  llvm::DenseSet<int> ownedBuffers;
  /// Generics folded into a GEMM's epilogue: no kernel when reached.
  llvm::DenseSet<Operation *> absorbed;
  std::string *lastError;
  FunctionPlan fplan;
  /// Row groups: first generic → (members, row shape, row length); other
  /// members → skipped when reached.
  struct RowGroup {
    SmallVector<linalg::GenericOp> members;
    SmallVector<int64_t> rows;
    int64_t length;
  };
  llvm::DenseMap<Operation *, RowGroup> groups;
  llvm::DenseSet<Operation *> grouped;
};

} // namespace mlir::kiln::cuda::detail

#endif // KILN_CODEGEN_CUDA_CUDAEMITTERINTERNAL_H
