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
  bool known = index >= 0 && (size_t)index < self.sizes_.size() && self.sizes_[index];
  if (known && self.results_[index]) // asked again: the same tensor (never freed under the code)
    return self.data_[index];
  PyGILState_STATE gil = PyGILState_Ensure();
  if (!self.errType_) {
    PyRef t;
    if (!known) {
      PyErr_Format(PyExc_RuntimeError,
                   "kiln: compiled code asked for result %lld, which is not a lazy result of %s "
                   "(a kiln bug)",
                   (long long)index, self.entry_.name.c_str());
    } else {
      // The entry's default-dtype guard held: torch.empty's default is
      // entry.defaultDtype now.
      PyObject *dtype = dtypeObject(self.entry_.results[index].dtype);
      t = PyRef::steal(
          emptyTensorPrebuilt(self.sizes_[index], dtype, dtype == self.entry_.defaultDtype));
    }
    void *data = t ? tensorDataPtr(t.get()) : nullptr;
    if (t && !PyErr_Occurred()) {
      self.results_[index] = std::move(t);
      self.data_[index] = data;
      PyGILState_Release(gil);
      return data;
    }
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_RuntimeError, "kiln: torch.empty gave no tensor for a result");
    PyErr_Fetch(&self.errType_, &self.errValue_, &self.errTrace_);
  }
  PyGILState_Release(gil);
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
