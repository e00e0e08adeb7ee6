//===- Partition.cpp - min-cut choice of saved and recomputed values --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Partition.h. The flow network has a source, a sink and two
// nodes per forward value v that a required value depends on: v_in -> v_out
// with v's saving cost, v_out -> u_in (infinite) for every user u in the
// set, source -> v_in (infinite) for block arguments and values whose op
// may not be recomputed, v_out -> sink (infinite) for required values. A
// minimum cut crosses only in -> out edges: those values are saved, and the
// values between them and the required ones are recomputed. Max-flow by
// Dinic's algorithm on integer capacities.
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/Partition.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace mlir::kiln {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

/// Dinic's max-flow over a residual graph in edge-list form.
class MaxFlow {
public:
  explicit MaxFlow(unsigned n) : adj(n), level(n), next(n) {}

  void addEdge(unsigned from, unsigned to, int64_t cap) {
    adj[from].push_back(edges.size());
    edges.push_back({to, cap});
    adj[to].push_back(edges.size());
    edges.push_back({from, 0});
  }

  void run(unsigned s, unsigned t) {
    while (levels(s, t)) {
      std::fill(next.begin(), next.end(), 0);
      while (push(s, t, kInf) > 0) {
      }
    }
  }

  /// Nodes reachable from `s` in the residual graph (after run()).
  std::vector<bool> sourceSide(unsigned s) {
    levels(s, ~0u);
    std::vector<bool> side(adj.size());
    for (unsigned i = 0; i < adj.size(); ++i)
      side[i] = level[i] >= 0;
    return side;
  }

private:
  struct Edge {
    unsigned to;
    int64_t cap;
  };

  bool levels(unsigned s, unsigned t) {
    std::fill(level.begin(), level.end(), -1);
    std::queue<unsigned> queue;
    level[s] = 0;
    queue.push(s);
    while (!queue.empty()) {
      unsigned u = queue.front();
      queue.pop();
      for (unsigned e : adj[u])
        if (edges[e].cap > 0 && level[edges[e].to] < 0) {
          level[edges[e].to] = level[u] + 1;
          queue.push(edges[e].to);
        }
    }
    return t < adj.size() && level[t] >= 0;
  }

  int64_t push(unsigned u, unsigned t, int64_t flow) {
    if (u == t)
      return flow;
    for (unsigned &i = next[u]; i < adj[u].size(); ++i) {
      Edge &e = edges[adj[u][i]];
      if (e.cap <= 0 || level[e.to] != level[u] + 1)
        continue;
      if (int64_t got = push(e.to, t, std::min(flow, e.cap))) {
        e.cap -= got;
        edges[adj[u][i] ^ 1].cap += got;
        return got;
      }
    }
    return 0;
  }

  std::vector<Edge> edges;
  std::vector<std::vector<unsigned>> adj;
  std::vector<int> level;
  std::vector<unsigned> next;
};

bool isDataMovement(Operation *op) {
  return isa<PermuteOp, ReshapeOp, BroadcastToOp, SliceOp, ConcatOp>(op);
}

/// Rough compute of `op` (multiply-adds or elements touched), for ordering
/// expensive ops under a budget.
double computeCost(Operation *op) {
  double out = 0;
  for (Value r : op->getResults())
    out += static_cast<double>(tensorBytes(r.getType()));
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lhs = llvm::cast<RankedTensorType>(mm->getOperand(0).getType());
    return out * static_cast<double>(std::max<int64_t>(lhs.getShape().back(), 1));
  }
  if (isa<Conv2dOp>(op)) {
    auto w = llvm::cast<RankedTensorType>(op->getOperand(1).getType());
    double taps = 1;
    for (int64_t d : w.getShape().drop_front())
      taps *= static_cast<double>(std::max<int64_t>(d, 1));
    return out * taps;
  }
  double in = 0;
  for (Value v : op->getOperands())
    in += static_cast<double>(tensorBytes(v.getType()));
  return in + out;
}

/// The network for one block; solve() answers for a set of banned ops.
class Network {
public:
  Network(Block &body, ArrayRef<Value> required) : body(body), required(required) { collect(); }
  Partition solve(const llvm::DenseSet<Operation *> &allowed) const;
  /// Ops the default partition may not recompute but a budget may allow.
  SmallVector<Operation *> expensiveOps() const;

private:
  void collect();
  int64_t weight(Value v) const;
  bool banned(Value v, const llvm::DenseSet<Operation *> &allowed) const;
  Partition readCut(const std::vector<bool> &side) const;

  Block &body;
  ArrayRef<Value> required;
  llvm::SetVector<Value> values; ///< arguments, then results in order
  llvm::DenseMap<Value, unsigned> index, dist;
  llvm::DenseSet<Value> isRequired, isResult;
};

void Network::collect() {
  llvm::DenseSet<Value> seen;
  SmallVector<Value> work(required.begin(), required.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp())
      work.append(def->operand_begin(), def->operand_end());
  }
  for (BlockArgument arg : body.getArguments())
    if (seen.contains(arg))
      values.insert(arg);
  for (Operation &op : body)
    for (Value r : op.getResults())
      if (seen.contains(r))
        values.insert(r);
  for (auto [i, v] : llvm::enumerate(values))
    index[v] = i;
  isRequired.insert(required.begin(), required.end());
  isResult.insert(body.getTerminator()->operand_begin(), body.getTerminator()->operand_end());
  // Ops between a value and the backward's use of it (1: used directly;
  // data movement does not count: it is free to redo).
  for (Value v : llvm::reverse(values)) {
    unsigned d = isRequired.contains(v) ? 1 : ~0u;
    for (Operation *user : v.getUsers())
      for (Value r : user->getResults())
        if (auto it = dist.find(r); it != dist.end() && it->second != ~0u)
          d = std::min(d, it->second + (isDataMovement(user) ? 0 : 1));
    dist[v] = d;
  }
}

int64_t Network::weight(Value v) const {
  // Results first, then inputs: both are alive outside the graph (an input
  // costs 1 so that a tie keeps a result rather than recomputing it).
  if (isResult.contains(v))
    return 0;
  if (llvm::isa<BlockArgument>(v))
    return 1;
  double bytes = static_cast<double>(tensorBytes(v.getType()));
  Operation *def = v.getDefiningOp();
  // Data movement, and a cheap op whose users are all cheap, is fused into
  // its users by codegen (a transposed GEMM operand, one loop): saving it
  // costs a buffer and a store the forward would not make.
  if (isDataMovement(def) ||
      (isCheapToRecompute(def) && !isa<ConstantOp>(def) &&
       llvm::all_of(v.getUsers(), [](Operation *u) { return isCheapToRecompute(u); })))
    bytes *= 2;
  double bias = std::pow(1.1, std::min(dist.lookup(v), 30u));
  return static_cast<int64_t>(std::min(bytes * bias * 16, static_cast<double>(kInf / 64)));
}

bool Network::banned(Value v, const llvm::DenseSet<Operation *> &allowed) const {
  Operation *def = v.getDefiningOp();
  return !def || !(isCheapToRecompute(def) || allowed.contains(def));
}

Partition Network::solve(const llvm::DenseSet<Operation *> &allowed) const {
  const unsigned source = 0, sink = 1;
  MaxFlow flow(2 * values.size() + 2);
  for (auto [i, v] : llvm::enumerate(values)) {
    unsigned in = 2 * i + 2, out = in + 1;
    flow.addEdge(in, out, weight(v));
    if (banned(v, allowed))
      flow.addEdge(source, in, kInf);
    if (isRequired.contains(v))
      flow.addEdge(out, sink, kInf);
    for (Operation *user : v.getUsers())
      for (Value r : user->getResults())
        if (auto it = index.find(r); it != index.end())
          flow.addEdge(out, 2 * it->second + 2, kInf);
  }
  flow.run(source, sink);
  return readCut(flow.sourceSide(source));
}

Partition Network::readCut(const std::vector<bool> &side) const {
  Partition p;
  llvm::DenseSet<Value> saved;
  for (auto [i, v] : llvm::enumerate(values))
    if (side[2 * i + 2] && !side[2 * i + 3]) {
      saved.insert(v);
      p.saved.push_back(v);
      if (!llvm::isa<BlockArgument>(v) && !isResult.contains(v))
        p.savedBytes += tensorBytes(v.getType());
    }
  // Everything between the saved values and the required ones is redone.
  llvm::DenseSet<Operation *> redo;
  SmallVector<Value> work(required.begin(), required.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (saved.contains(v) || !def || !redo.insert(def).second)
      continue;
    work.append(def->operand_begin(), def->operand_end());
  }
  for (Operation &op : body)
    if (redo.contains(&op))
      p.recomputed.push_back(&op);
  return p;
}

SmallVector<Operation *> Network::expensiveOps() const {
  SmallVector<Operation *> ops;
  for (Value v : values) {
    Operation *def = v.getDefiningOp();
    if (def && !isCheapToRecompute(def) && !isa<RandomOp>(def) &&
        llvm::isa_and_nonnull<KilnDialect>(def->getDialect()) && def->getNumRegions() == 0 &&
        (ops.empty() || ops.back() != def))
      ops.push_back(def);
  }
  return ops;
}

} // namespace

int64_t tensorBytes(Type type) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t)
    return 8;
  int64_t n = 1;
  for (int64_t d : t.getShape())
    n *= ShapedType::isDynamic(d) ? 4096 : d;
  if (!t.getElementType().isIntOrFloat())
    return n * 8;
  unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return n * std::max<int64_t>(1, (bits + 7) / 8);
}

bool isCheapToRecompute(Operation *op) {
  return isa<ConstantOp, CastOp, NegOp, AbsOp, ReluOp, ExpOp, LogOp, TanhOp, SigmoidOp, GeluOp,
             SiluOp, SqrtOp, RsqrtOp, ErfOp, SinOp, CosOp, TanOp, AtanOp, FloorOp, CeilOp, RoundOp,
             TruncOp, Log1pOp, Expm1Op, Log2Op, AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp,
             MinimumOp, FmodOp, FloorDivOp, EqOp, NeOp, LtOp, LeOp, GtOp, GeOp, SelectOp>(op) ||
         isDataMovement(op);
}

Partition partitionForBackward(Block &body, ArrayRef<Value> required,
                               const PartitionOptions &options) {
  Network net(body, required);
  llvm::DenseSet<Operation *> allowed;
  Partition best = net.solve(allowed);
  if (options.memoryBudget >= 1.0 || required.empty())
    return best;
  SmallVector<Operation *> candidates = net.expensiveOps();
  llvm::stable_sort(candidates, [](Operation *a, Operation *b) {
    auto perByte = [](Operation *op) {
      return computeCost(op) / std::max<double>(1, tensorBytes(op->getResult(0).getType()));
    };
    return perByte(a) < perByte(b);
  });
  llvm::DenseSet<Operation *> all(candidates.begin(), candidates.end());
  int64_t least = net.solve(all).savedBytes;
  double target = static_cast<double>(least) + std::max(0.0, options.memoryBudget) *
                                                   static_cast<double>(best.savedBytes - least);
  for (Operation *op : candidates) {
    if (static_cast<double>(best.savedBytes) <= target)
      break;
    allowed.insert(op);
    best = net.solve(allowed);
  }
  return best;
}

} // namespace mlir::kiln
