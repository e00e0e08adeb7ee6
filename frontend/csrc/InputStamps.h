//===- InputStamps.h - stamping a compiled graph's input tensors -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The frontend half of runtime/cpu/WeightStamps.h: around a compiled
// graph's run, publishes (data pointer, serial, version) of its input
// tensors so that oneDNN convolutions and GEMMs (runtime/cpu/PackedGemm.h)
// reorder a weight once per tensor and version instead of on every call. Only graphs whose shims
// asked for a stamp on an earlier run are stamped (the others pay nothing).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_INPUTSTAMPS_H
#define KILN_FRONTEND_INPUTSTAMPS_H

#include "runtime/cpu/WeightStamps.h"

#include <Python.h>

#include <vector>

namespace kiln {

/// Publishes stamps for a run of the compiled graph `key` (an identity of
/// the entry) on the calling thread while it lives; `tensors[i]` (borrowed)
/// passes its data as `data[i]`. Needs the GIL when constructed; the
/// destructor (which unpublishes) does not.
class InputStamps {
public:
  InputStamps(const void *key, const std::vector<PyObject *> &tensors,
              const std::vector<void *> &data);
  ~InputStamps();
  InputStamps(const InputStamps &) = delete;
  InputStamps &operator=(const InputStamps &) = delete;
  /// After the run (with the GIL): remembers whether a shim asked.
  void finish();

private:
  const void *key_;
  std::vector<KilnInputStamp> stamps_;
};

/// kiln.config.freeze_weights (off: nothing is stamped, weights are
/// reordered on every call).
void setFreezeWeights(bool on);

} // namespace kiln

#endif // KILN_FRONTEND_INPUTSTAMPS_H
