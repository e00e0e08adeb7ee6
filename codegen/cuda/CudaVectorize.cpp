//===- CudaVectorize.cpp - 128-bit loads/stores for pointwise kernels -----===//
// SPDX-License-Identifier: Apache-2.0
//
// The vectorized form of a pointwise kernel: each thread handles V
// consecutive elements (V = 16 bytes / the widest vector operand's element:
// 4 floats, 8 halves/bfloat16s), loading and storing them with one 128-bit
// access per operand (uint4 reinterpret; narrower operands of a mixed-type
// kernel use uint2/unsigned). Applies when every output is contiguous with
// an identity map and every input is contiguous (identity map), contiguous
// along the innermost loop dim (a broadcast over rows such as a bias), or
// does not depend on it (a per-row value, loaded once per vector); an input
// read through another map, or a body that uses linalg.index, keeps the
// scalar kernel. With a non-identity input the innermost extent must be a
// multiple of V; with identity maps only, a scalar tail loop handles the
// last total % V elements. The vector path runs when every pointer is
// 16-byte aligned (checked in the kernel: torch's caching allocator hands
// out 512-byte aligned blocks, but a view may start anywhere); otherwise
// the same kernel runs its scalar loop.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

namespace {

/// How the innermost loop dim reaches one operand.
enum class Access { Contiguous, InnerContiguous, Invariant, Other };

Access classify(AffineMap map, RankedTensorType t, ArrayRef<int64_t> ranges) {
  if (map.isIdentity() && t.getShape() == ranges)
    return Access::Contiguous;
  unsigned inner = ranges.size() - 1;
  bool uses = false;
  for (auto [k, e] : llvm::enumerate(map.getResults())) {
    if (t.getDimSize(k) == 1 || !e.isFunctionOfDim(inner))
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || k + 1 != map.getNumResults() || t.getDimSize(k) != ranges[inner])
      return Access::Other;
    uses = true;
  }
  return uses ? Access::InnerContiguous : Access::Invariant;
}

/// Unsigned type of `bytes` bytes for one reinterpreted access.
const char *chunkType(int64_t bytes) {
  switch (bytes) {
  case 16:
    return "uint4";
  case 8:
    return "uint2";
  case 4:
    return "unsigned int";
  case 2:
    return "unsigned short";
  default:
    return "unsigned char";
  }
}

} // namespace

int64_t FunctionEmitter::vectorWidth(ArrayRef<PointwiseOperand> operands, ArrayRef<int64_t> ranges,
                                     int64_t total) {
  if (ranges.empty())
    return 1;
  int64_t widest = 0;
  bool allContiguous = true;
  for (const PointwiseOperand &o : operands) {
    Access a = classify(o.map, o.type, ranges);
    if (a == Access::Other || (o.isOutput && a != Access::Contiguous))
      return 1;
    allContiguous &= a == Access::Contiguous;
    if (a != Access::Invariant)
      widest = std::max(widest, byteWidth(o.type.getElementType()));
  }
  if (widest == 0 || widest > 8)
    return 1;
  int64_t v = 16 / widest;
  if (total < v || (!allContiguous && ranges.back() % v != 0))
    return 1;
  return v;
}

void FunctionEmitter::printVectorLoop(llvm::raw_ostream &o, ArrayRef<PointwiseOperand> operands,
                                      ArrayRef<int64_t> ranges, int64_t v, const std::string &ity,
                                      const std::string &start, const std::string &stride,
                                      const std::string &body) {
  int64_t total = 1;
  for (int64_t r : ranges)
    total *= r;
  std::string in = "      ";
  std::string loads, lanes, laneStores, stores;
  llvm::raw_string_ostream ls(loads), lane(lanes), lst(laneStores), ss(stores);
  llvm::SmallBitVector used(ranges.size());
  for (const PointwiseOperand &p : operands) {
    Type elt = p.type.getElementType();
    std::string st = *storageType(elt);
    Access a = classify(p.map, p.type, ranges);
    std::string off = offsetExpr(p.map, p.type, ranges, true, "i0", used);
    std::string chunk = chunkType(v * byteWidth(elt));
    if (p.isOutput) {
      std::string y = "y" + p.param.substr(3);
      ls << in << "alignas(16) " << st << " " << y << "[" << v << "];\n";
      lst << in << "  " << y << "[j] = " << storeValue(p.value, elt) << ";\n";
      ss << in << "*reinterpret_cast<" << chunk << " *>(" << p.param << " + " << off
         << ") = *reinterpret_cast<const " << chunk << " *>(" << y << ");\n";
    } else if (a == Access::Invariant) {
      ls << in << "const " << *valueType(elt) << " " << p.name << " = "
         << loadExpr(p.param, off, elt) << ";\n";
    } else {
      std::string x = "x" + p.name.substr(1);
      ls << in << "alignas(16) " << st << " " << x << "[" << v << "];\n";
      ls << in << "*reinterpret_cast<" << chunk << " *>(" << x << ") = *reinterpret_cast<const "
         << chunk << " *>(" << p.param << " + " << off << ");\n";
      lane << in << "  const " << *valueType(elt) << " " << p.name << " = " << loadExpr(x, "j", elt)
           << ";\n";
    }
  }
  ls.flush();
  lane.flush();
  lst.flush();
  ss.flush();
  o << "    for (" << ity << " vi = " << start << "; vi < " << total / v << "; vi += " << stride
    << ") {\n";
  o << in << "const " << ity << " i0 = vi * " << v << ";\n";
  SmallVector<std::string> decode = decodeLinearIndex("i0", ranges);
  for (unsigned d = 0; d < ranges.size(); ++d)
    if (used.test(d))
      o << in << "const " << ity << " d" << d << " = " << decode[d] << ";\n";
  o << loads;
  o << "#pragma unroll\n";
  o << in << "for (int j = 0; j < " << v << "; ++j) {\n";
  o << lanes;
  // The body was printed for a 4-space scalar loop: indent it to the lane loop.
  for (StringRef line : llvm::split(StringRef(body).rtrim('\n'), '\n'))
    if (!line.empty())
      o << "    " << line << "\n";
  o << laneStores << in << "}\n";
  o << stores << "    }\n";
}

} // namespace mlir::kiln::cuda::detail
