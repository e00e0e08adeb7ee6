//===- WeightStamps.h - which graph inputs are unchanged tensors --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// How run-time shims know that a buffer they read is a graph input whose
// tensor has not changed since an earlier call, so that work derived from
// it alone (oneDNN's weight reorder, DnnlConv.cpp) is done once and cached
// ("freezing" without making parameters compile-time constants: the
// compiled code still reads them per call, only derived layouts are
// cached). Before it runs a compiled graph, the frontend publishes one
// stamp per input tensor on the calling thread: the input's data pointer,
// a serial number unique to the tensor object for the life of the process
// (a new tensor at a reused address gets a new serial) and the tensor's
// version counter (`t._version`: every in-place write through torch bumps
// it: `add_`, `copy_`, `load_state_dict`). A cached derivation is valid
// while serial, version and data pointer are those it was made from; when
// the tensor dies the frontend calls kilnDnnlForgetWeights(serial) and
// kilnGemmForgetWeights(serial) (PackedGemm.h: nn.Linear weights packed
// for oneDNN's matmul).
// A write that bypasses the version counter (through `t.data`, numpy, or
// ctypes) is not seen: kiln.config.freeze_weights = False turns stamps off.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_WEIGHTSTAMPS_H
#define KILN_RUNTIME_CPU_WEIGHTSTAMPS_H

#include <cstddef>
#include <cstdint>

extern "C" {
struct KilnInputStamp {
  const void *data;
  uint64_t serial;
  int64_t version;
};

/// Publishes `stamps` (borrowed: valid until the next call, which the
/// frontend makes with n = 0 once the graph returned) for the calling thread.
void kilnSetInputStamps(const KilnInputStamp *stamps, size_t n);
/// The stamp of the input whose data pointer is `data` on this thread, or
/// null (not a graph input, or no stamps published).
const KilnInputStamp *kilnFindInputStamp(const void *data);
/// Whether kilnFindInputStamp was called on this thread since the last
/// call of this function (which clears it): the graph run has a shim that
/// would use stamps.
bool kilnTakeStampAsked();
/// Drops what was cached for the tensor of `serial` (it died).
void kilnDnnlForgetWeights(uint64_t serial);
}

#endif // KILN_RUNTIME_CPU_WEIGHTSTAMPS_H
