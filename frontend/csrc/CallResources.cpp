//===- CallResources.cpp - tensors a compiled call allocates and lets go of ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CallResources.h.
//===----------------------------------------------------------------------===//
#include "CallResources.h"

#include "Entry.h"
#include "TensorInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cstdlib>

namespace kiln {

std::vector<char> markLazyResults(mlir::func::FuncOp func, const std::vector<int> &inPlaceOf) {
  std::vector<char> lazy;
  if (!func)
    return lazy;
  mlir::OpBuilder b(func.getContext());
  for (auto [j, t] : llvm::enumerate(func.getResultTypes())) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(t);
    if (!type || (j < inPlaceOf.size() && inPlaceOf[j] >= 0) ||
        !type.getElementType().isIntOrFloat())
      continue;
    bool big =
        !type.hasStaticShape() ||
        type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8) >= kLazyResultMinBytes;
    if (!big)
      continue;
    lazy.resize(func.getNumResults(), 0);
    lazy[j] = 1;
    func.setResultAttr(j, "kiln.lazy_output", b.getI64IntegerAttr((int64_t)j));
  }
  return lazy;
}

CallResources::~CallResources() {
  for (void *p : scratch_)
    std::free(p);
  Py_XDECREF(errType_);
  Py_XDECREF(errValue_);
  Py_XDECREF(errTrace_);
}

void *CallResources::allocate(void *context, int64_t index, int64_t bytes) {
  auto &self = *static_cast<CallResources *>(context);
  void *data = nullptr;
  bool ok = false;
  PyGILState_STATE gil = PyGILState_Ensure();
  if (!self.errType_ && index >= 0 && (size_t)index < self.sizes_.size()) {
    // The entry's default-dtype guard held: torch.empty's default is
    // entry.defaultDtype now.
    PyObject *dtype = dtypeObject(self.entry_.results[index].dtype);
    PyRef t = PyRef::steal(
        emptyTensorPrebuilt(self.sizes_[index], dtype, dtype == self.entry_.defaultDtype));
    data = t ? tensorDataPtr(t.get()) : nullptr;
    ok = t && !PyErr_Occurred();
    if (ok)
      self.results_[index] = std::move(t);
    else if (PyErr_Occurred())
      PyErr_Fetch(&self.errType_, &self.errValue_, &self.errTrace_);
    else
      PyErr_SetString(PyExc_RuntimeError, "kiln: a lazy result's index is out of range");
  }
  if (!ok && !self.errType_ && PyErr_Occurred())
    PyErr_Fetch(&self.errType_, &self.errValue_, &self.errTrace_);
  PyGILState_Release(gil);
  if (ok)
    return data;
  // The code writes somewhere; the error is raised after the call.
  void *scratch = std::malloc(bytes > 0 ? (size_t)bytes : 1);
  if (!scratch)
    std::abort(); // out of memory while out of memory: nothing left to write into
  self.scratch_.push_back(scratch);
  return scratch;
}

void CallResources::release(void *context, int64_t index) {
  auto &self = *static_cast<CallResources *>(context);
  if (index < 0 || (size_t)index >= self.owned_.size() || !self.owned_[index])
    return;
  PyGILState_STATE gil = PyGILState_Ensure();
  {
    PyRef dropped = std::move(self.owned_[index]);
  }
  PyGILState_Release(gil);
}

bool CallResources::finish() {
  if (errType_) {
    PyErr_Restore(errType_, errValue_, errTrace_);
    errType_ = errValue_ = errTrace_ = nullptr;
    return false;
  }
  // A result the code never writes (no elements: its alloc had no use and
  // was erased as dead) is allocated now, as it was before the call.
  for (size_t j = 0; j < entry_.lazyResults.size(); ++j)
    if (entry_.lazyResults[j] && !results_[j]) {
      PyObject *dtype = dtypeObject(entry_.results[j].dtype);
      results_[j] =
          PyRef::steal(emptyTensorPrebuilt(sizes_[j], dtype, dtype == entry_.defaultDtype));
      if (!results_[j])
        return false;
    }
  return true;
}

} // namespace kiln
