//===- ParallelLoops.cpp - which loops run on several threads ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-parallelize-loops` runs on the `scf.parallel` nests that
// `convert-linalg-to-parallel-loops` made of the linalg ops left after BLAS
// calls. It keeps a loop parallel only when running it on several threads
// can pay for itself, and shapes it so that `convert-scf-to-openmp` makes
// a work-sharing loop whose innermost dimension is still a plain loop for
// LLVM's vectorizer:
//
//  * only a loop nest at the top of the function (not inside another loop:
//    kiln-cpu-fuse-rows' row loops stay serial, so their one-row buffers stay
//    private), with static bounds, no reductions, and an estimated work of
//    at least kMinParallelWork operation-iterations is kept parallel;
//  * its last dimension becomes an `scf.for` inside the parallel loop (so
//    the collapsed OpenMP iteration space never divides the vectorized
//    index); when the other dimensions have fewer than kMinParallelTrips
//    iterations in all (a [1, 512, 1024] tensor, a flat 1-d loop), the last
//    dimension is also cut into blocks of kBlock iterations that become a
//    parallel dimension; a body that has its own loop (a reduction over
//    the inner dimension) keeps every parallel dimension parallel;
//  * every other `scf.parallel` becomes a nest of `scf.for`.
//
// The thread count is not decided here: the OpenMP calls go to kiln's shim
// over torch's libgomp (OpenMPShim.cpp), which uses torch.get_num_threads()
// threads at run time and runs the loop inline at one thread.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUPARALLELIZELOOPSPASS
#define GEN_PASS_DEF_CPULOWERALLOCASCOPESPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// Below this many operation-iterations a fork/join of the thread team
/// (a few microseconds when the threads are awake) costs more than it
/// saves: about 20 µs of single-threaded work.
constexpr int64_t kMinParallelWork = int64_t(1) << 16;
/// Enough outer iterations to share among threads without cutting the
/// innermost dimension.
constexpr int64_t kMinParallelTrips = 32;
/// Iterations of the innermost dimension per block when it is cut (a
/// multiple of every vector width).
constexpr int64_t kBlock = 1024;

std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb), u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u > *l ? (*u - *l + *s - 1) / *s : 0;
}

/// Operations executed by one run of `block`, counting nested loops with
/// static bounds by their trip counts (a dynamic loop counts once: the
/// estimate only errs towards staying serial).
int64_t workOf(Block &block) {
  int64_t work = 0;
  for (Operation &op : block) {
    int64_t inner = 0;
    for (Region &region : op.getRegions())
      for (Block &b : region)
        inner += workOf(b);
    int64_t trips = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      trips = tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()).value_or(1);
    else if (auto par = dyn_cast<scf::ParallelOp>(op))
      for (unsigned d = 0; d < par.getNumLoops(); ++d)
        trips *=
            tripCount(par.getLowerBound()[d], par.getUpperBound()[d], par.getStep()[d]).value_or(1);
    work += 1 + trips * inner;
  }
  return work;
}

bool hasInnerLoop(Block &block) {
  return block.walk([](LoopLikeOpInterface) { return WalkResult::interrupt(); }).wasInterrupted();
}

/// Moves `loop`'s body (without its terminator) to the start of `dest`
/// (before its terminator), mapping its induction variables to `ivs`.
void moveBody(scf::ParallelOp loop, ValueRange ivs, Block *dest) {
  Block *body = loop.getBody();
  for (auto [arg, iv] : llvm::zip(body->getArguments(), ivs))
    arg.replaceAllUsesWith(iv);
  dest->getOperations().splice(std::prev(dest->end()), body->getOperations(), body->begin(),
                               std::prev(body->end()));
}

/// Replaces a reduction-free `scf.parallel` by a nest of `scf.for`.
void serialize(scf::ParallelOp loop) {
  OpBuilder b(loop);
  SmallVector<Value> ivs;
  Block *inner = nullptr;
  for (unsigned d = 0; d < loop.getNumLoops(); ++d) {
    auto f = b.create<scf::ForOp>(loop.getLoc(), loop.getLowerBound()[d], loop.getUpperBound()[d],
                                  loop.getStep()[d]);
    ivs.push_back(f.getInductionVar());
    inner = f.getBody();
    b.setInsertionPointToStart(inner);
  }
  moveBody(loop, ivs, inner);
  loop.erase();
}

/// Rebuilds a chosen loop: its leading dimensions (and, when they are too
/// few, blocks of the last one) parallel, the last dimension an scf.for.
void shapeForThreads(scf::ParallelOp loop, ArrayRef<int64_t> trips) {
  unsigned rank = loop.getNumLoops(), last = rank - 1;
  int64_t outerTrips = 1;
  for (unsigned d = 0; d < last; ++d)
    outerTrips *= trips[d];
  bool cutLast = outerTrips < kMinParallelTrips && trips[last] > kBlock;
  if (rank == 1 && !cutLast) // nothing to share but single iterations
    return serialize(loop);

  Location loc = loop.getLoc();
  OpBuilder b(loop);
  SmallVector<Value> lbs(loop.getLowerBound().take_front(last)),
      ubs(loop.getUpperBound().take_front(last)), steps(loop.getStep().take_front(last));
  Value lastLb = loop.getLowerBound()[last], lastUb = loop.getUpperBound()[last],
        lastStep = loop.getStep()[last];
  if (cutLast) {
    lbs.push_back(b.create<arith::ConstantIndexOp>(loc, 0));
    ubs.push_back(b.create<arith::ConstantIndexOp>(loc, (trips[last] + kBlock - 1) / kBlock));
    steps.push_back(b.create<arith::ConstantIndexOp>(loc, 1));
  }
  auto outer = b.create<scf::ParallelOp>(loc, lbs, ubs, steps);
  b.setInsertionPointToStart(outer.getBody());
  SmallVector<Value> ivs(ValueRange(outer.getInductionVars()).take_front(last));
  Value from = lastLb, to = lastUb;
  if (cutLast) {
    // Block k covers lb + [k*B, (k+1)*B) * step, clipped to ub.
    Value span =
        b.create<arith::MulIOp>(loc, lastStep, b.create<arith::ConstantIndexOp>(loc, kBlock));
    Value start = b.create<arith::MulIOp>(loc, outer.getInductionVars()[last], span);
    from = b.create<arith::AddIOp>(loc, lastLb, start);
    to = b.create<arith::MinSIOp>(loc, b.create<arith::AddIOp>(loc, from, span), lastUb);
  }
  auto inner = b.create<scf::ForOp>(loc, from, to, lastStep);
  ivs.push_back(inner.getInductionVar());
  moveBody(loop, ivs, inner.getBody());
  loop.erase();
}

/// At most this many blocks of rows (one stack copy of the row buffers
/// each).
constexpr int64_t kMaxRowBlocks = 64;

/// The stack buffers at the start of `fn`'s body that only `loop` uses
/// (kiln-cpu-fuse-rows' one-row buffers); null when another op uses one.
std::optional<SmallVector<memref::AllocaOp>> privateRowBuffers(func::FuncOp fn, scf::ForOp loop) {
  SmallVector<memref::AllocaOp> buffers;
  for (auto alloca : fn.getBody().front().getOps<memref::AllocaOp>()) {
    bool usedByLoop = false, usedElsewhere = false;
    for (Operation *user : alloca->getUsers())
      (loop->isAncestor(user) ? usedByLoop : usedElsewhere) = true;
    if (usedByLoop && usedElsewhere)
      return std::nullopt;
    if (usedByLoop)
      buffers.push_back(alloca);
  }
  return buffers;
}

/// A kiln-cpu-fuse-rows loop over `n` independent rows becomes a parallel loop
/// over blocks of rows (the smallest divisor of n giving at most
/// kMaxRowBlocks blocks), each block an alloca scope with its own copy of
/// the row buffers and the original loop over its rows.
void parallelizeRows(scf::ForOp loop, int64_t n, ArrayRef<memref::AllocaOp> buffers) {
  int64_t perBlock = llvm::divideCeil(n, kMaxRowBlocks);
  while (n % perBlock != 0)
    ++perBlock;
  if (perBlock == n) // one block: nothing to share
    return;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  auto index = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };
  Value zero = index(0), one = index(1), blocks = index(n / perBlock), size = index(perBlock);
  auto par = b.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{blocks}, ValueRange{one});
  b.setInsertionPointToStart(par.getBody());
  auto scope = b.create<memref::AllocaScopeOp>(loc, TypeRange{});
  Block *scopeBody = new Block;
  scope.getBodyRegion().push_back(scopeBody);
  b.setInsertionPointToStart(scopeBody);
  IRMapping map;
  for (memref::AllocaOp buffer : buffers)
    map.map(buffer.getResult(), b.clone(*buffer)->getResult(0));
  auto rows = b.create<scf::ForOp>(loc, zero, size, one);
  b.create<memref::AllocaScopeReturnOp>(loc);
  b.setInsertionPointToStart(rows.getBody());
  Value first = b.create<arith::MulIOp>(loc, par.getInductionVars()[0], size);
  map.map(loop.getInductionVar(), b.create<arith::AddIOp>(loc, first, rows.getInductionVar()));
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
  for (memref::AllocaOp buffer : buffers)
    buffer.erase();
}

struct ParallelizeLoops : impl::CpuParallelizeLoopsPassBase<ParallelizeLoops> {
  using CpuParallelizeLoopsPassBase::CpuParallelizeLoopsPassBase;

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) { loops.push_back(loop); });
    // Post-order: a nested loop is serialized before its parent is looked at.
    for (scf::ParallelOp loop : loops) {
      if (loop.getNumReductions() != 0) {
        loop.emitError("kiln: scf.parallel with reductions is not supported by the CPU "
                       "lowering");
        return signalPassFailure();
      }
      SmallVector<int64_t> trips;
      for (unsigned d = 0; d < loop.getNumLoops(); ++d)
        if (auto n = tripCount(loop.getLowerBound()[d], loop.getUpperBound()[d], loop.getStep()[d]))
          trips.push_back(*n);
      bool topLevel = !loop->getParentOfType<LoopLikeOpInterface>();
      bool isStatic = trips.size() == loop.getNumLoops();
      int64_t iterations = 1;
      for (int64_t n : trips)
        iterations *= n;
      if (!enabled || !topLevel || !isStatic ||
          iterations * workOf(*loop.getBody()) < kMinParallelWork)
        serialize(loop);
      else if (!hasInnerLoop(*loop.getBody()))
        shapeForThreads(loop, trips);
      // else: an inner (reduction) loop is the vectorized one; every
      // parallel dimension stays parallel.
    }
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || !enabled) // a BLAS shim's declaration
      return;
    SmallVector<scf::ForOp> rowLoops;
    for (auto loop : fn.getBody().front().getOps<scf::ForOp>())
      if (loop->hasAttr(kIndependentRowsAttr))
        rowLoops.push_back(loop);
    for (scf::ForOp loop : rowLoops) {
      std::optional<int64_t> n =
          tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
      if (!n || getConstantIntValue(loop.getLowerBound()) != 0 ||
          getConstantIntValue(loop.getStep()) != 1 ||
          *n * workOf(*loop.getBody()) < kMinParallelWork)
        continue;
      if (auto buffers = privateRowBuffers(fn, loop))
        parallelizeRows(loop, *n, *buffers);
    }
  }
};

/// `memref.alloca_scope { body }` → stacksave; body; stackrestore, inline
/// in the parent block (what MemRefToLLVM does later, done before
/// scf-to-cf can split the body into blocks, which the op forbids).
struct LowerAllocaScopes : impl::CpuLowerAllocaScopesPassBase<LowerAllocaScopes> {
  void runOnOperation() override {
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation().walk([&](memref::AllocaScopeOp scope) { scopes.push_back(scope); });
    for (memref::AllocaScopeOp scope : scopes) { // inner scopes first
      OpBuilder b(scope);
      Location loc = scope.getLoc();
      Value saved = b.create<LLVM::StackSaveOp>(loc, LLVM::LLVMPointerType::get(b.getContext()));
      Block *body = &scope.getBodyRegion().front();
      Operation *ret = body->getTerminator();
      scope->replaceAllUsesWith(ret->getOperands());
      scope->getBlock()->getOperations().splice(Block::iterator(scope), body->getOperations(),
                                                body->begin(), Block::iterator(ret));
      b.create<LLVM::StackRestoreOp>(loc, saved);
      scope.erase();
    }
  }
};

} // namespace
} // namespace mlir::kiln
