//===- InputLayouts.cpp - caller's tensors passed in their own dim order --===//
// SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//
#include "capture/values/InputLayouts.h"

#include "capture/Capture.h"
#include "ir/KilnOps.h"

#include <algorithm>

namespace kiln {

std::vector<int64_t> denseMemoryOrder(const std::vector<int64_t> &sizes,
                                      const std::vector<int64_t> &strides) {
  if (sizes.size() != strides.size())
    return {};
  std::vector<int64_t> ones, order;
  for (int64_t d = 0; d < (int64_t)sizes.size(); ++d) {
    if (sizes[d] == 0)
      return {};
    (sizes[d] == 1 ? ones : order).push_back(d);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  int64_t expect = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (strides[*it] != expect)
      return {};
    expect *= sizes[*it];
  }
  ones.insert(ones.end(), order.begin(), order.end());
  return ones;
}

void chooseInputLayout(GraphInput &in, const std::vector<int64_t> &sizes,
                       const std::vector<int64_t> &strides, bool passDense) {
  int64_t expect = 1;
  for (int i = (int)sizes.size() - 1; i >= 0; --i) {
    if (sizes[i] != 1 && strides[i] != expect)
      in.makeContiguous = true;
    expect *= sizes[i];
  }
  if (in.makeContiguous && passDense)
    in.memoryOrder = denseMemoryOrder(sizes, strides);
  in.makeContiguous &= in.memoryOrder.empty();
}

mlir::Value inputValue(mlir::OpBuilder &b, mlir::Location loc, const GraphInput &in,
                       mlir::Value arg) {
  if (in.memoryOrder.empty())
    return arg;
  std::vector<int64_t> dims(in.memoryOrder.size()); // the tensor's dims from memory order
  for (size_t k = 0; k < dims.size(); ++k)
    dims[in.memoryOrder[k]] = (int64_t)k;
  auto p = b.create<mlir::kiln::PermuteOp>(loc, arg, b.getDenseI64ArrayAttr(dims));
  p->setAttr(kInputLayoutAttr, b.getUnitAttr());
  return p;
}

std::vector<int64_t> memorySizes(const GraphInput &in, const std::vector<int64_t> &sizes) {
  if (in.memoryOrder.empty())
    return sizes;
  std::vector<int64_t> r;
  for (int64_t d : in.memoryOrder)
    r.push_back(sizes[d]);
  return r;
}

mlir::Value throughInputLayout(mlir::Value v) {
  if (auto p = v ? v.getDefiningOp<mlir::kiln::PermuteOp>() : nullptr)
    if (p->hasAttr(kInputLayoutAttr) && llvm::isa<mlir::BlockArgument>(p.getInput()))
      return p.getInput();
  return v;
}

std::vector<mlir::Value> inputValues(mlir::Block &entry) {
  std::vector<mlir::Value> values;
  for (mlir::BlockArgument arg : entry.getArguments()) {
    mlir::Value v = arg;
    for (mlir::Operation *user : arg.getUsers())
      if (llvm::isa<mlir::kiln::PermuteOp>(user) && user->hasAttr(kInputLayoutAttr))
        v = user->getResult(0);
    values.push_back(v);
  }
  return values;
}

} // namespace kiln
