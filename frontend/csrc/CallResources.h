//===- CallResources.h - tensors a compiled call allocates and lets go of -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The frontend's side of runtime/cpu/CallHooks.h for one call:
//  * lazy results: a result of at least kLazyResultMinBytes (or with a
//    symbolic size) is marked `kiln.lazy_output` before lowering
//    (markLazyResults) and passed without memory; the code asks for it
//    right before its first write (codegen/cpu/LazyOutputs.cpp) and it is
//    allocated then, through torch.empty with the GIL taken again, so the
//    caller's tensor does not sit next to the call's intermediates;
//  * owned inputs: inputs the caller handed over (a backward's saved
//    activations, runGraph's `owned`) are dropped where the code says it
//    is done with them (codegen/cpu/ReleaseDeadInputs.cpp).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CALLRESOURCES_H
#define KILN_FRONTEND_CALLRESOURCES_H

#include "PyRef.h"

#include "runtime/cpu/CallHooks.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace kiln {

struct Entry;

/// Results smaller than this are allocated before the call (a callback
/// costs more than they could save).
constexpr int64_t kLazyResultMinBytes = int64_t(64) << 10;

/// Marks the results of `func` (a graph's `forward`, before lowering) that
/// are at least kLazyResultMinBytes or have a symbolic size, other than
/// those computed into an input (`inPlaceOf[j] >= 0`), with
/// `kiln.lazy_output = j`; returns one flag per result (empty: none).
std::vector<char> markLazyResults(mlir::func::FuncOp func, const std::vector<int> &inPlaceOf);

/// One call of `entry`: hooks() go around the compiled call (GIL
/// released), then finish() with the GIL held.
class CallResources {
public:
  /// `sizes[j]`: lazy result j's size tuple for torch.empty (empty: none);
  /// `results[j]` (null until then) gets its tensor when the code asks.
  /// `owned`: one slot per input, the only reference to each input the
  /// caller handed over (empty: none).
  CallResources(const Entry &entry, std::vector<PyObject *> sizes, std::vector<PyRef> &results,
                llvm::MutableArrayRef<PyRef> owned)
      : entry_(entry), sizes_(std::move(sizes)), results_(results), owned_(owned),
        data_(sizes_.size(), nullptr) {}
  ~CallResources();
  CallResources(const CallResources &) = delete;
  CallResources &operator=(const CallResources &) = delete;

  rt::CallHooks hooks() { return {&allocate, &release, this}; }
  /// After the call: allocates the lazy results the code never asked for
  /// (it writes nothing into them: empty tensors); false with the Python
  /// error of a failed allocation (the code wrote into scratch memory).
  bool finish();

private:
  static void *allocate(void *context, int64_t index, int64_t bytes);
  static void release(void *context, int64_t index);

  const Entry &entry_;
  std::vector<PyObject *> sizes_;
  std::vector<PyRef> &results_;
  llvm::MutableArrayRef<PyRef> owned_;
  std::vector<void *> data_; ///< per lazy result handed out: its data pointer
  std::vector<void *> scratch_;
  PyObject *errType_ = nullptr, *errValue_ = nullptr, *errTrace_ = nullptr;
};

} // namespace kiln

#endif // KILN_FRONTEND_CALLRESOURCES_H
