//===- TensorInfo.h - torch tensor metadata via the C API ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Reads a torch.Tensor's dtype, sizes, strides, device, requires_grad and
// data pointer through the Python C API (kiln does not link libtorch), and
// maps torch dtypes to kiln's DType enum.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_TENSORINFO_H
#define KILN_FRONTEND_TENSORINFO_H

#include "PyRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Element types kiln compiles.
enum class DType { F32, F64, F16, BF16, I64, I32, Bool };

/// Category used by torch's type promotion, ordered: Bool < Integer < Floating
/// (a wider category wins when operands mix).
enum class DTypeCategory { Bool, Integer, Floating };

/// The promotion category of `d`.
DTypeCategory dtypeCategory(DType d);
/// Whether `d` is a floating-point dtype (f16, bf16, f32, f64).
inline bool isFloatingDType(DType d) { return dtypeCategory(d) == DTypeCategory::Floating; }
/// Size in bytes of one element.
int dtypeBytes(DType d);
/// The torch dtype object (borrowed; lives as long as torch).
PyObject *dtypeObject(DType d);
/// The DType of a torch dtype object, if kiln supports it.
std::optional<DType> dtypeFromObject(PyObject *dtype);
/// "torch.float32" style name.
std::string dtypeName(DType d);

/// A tensor guard's size (and a graph result's size) that is symbolic: any
/// value of 2 or more is accepted. The captured IR's types mark the same
/// dims with mlir::ShapedType::kDynamic; guards are read at run time without
/// MLIR, so they carry their own marker.
constexpr int64_t kSymbolicSize = -1;

/// Metadata of one tensor, read in one go.
struct TensorMeta {
  PyObject *dtype = nullptr; ///< borrowed from torch's dtype singletons
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  bool requiresGrad = false;
  bool isCpu = false;
  /// layout == torch.strided (dense); sparse/mkldnn tensors are not.
  bool strided = true;
  /// kCpuDevice, kMetaDevice, or the CUDA device index (>= 0); other
  /// devices are kOtherDevice.
  int device = kOtherDevice;
  static constexpr int kCpuDevice = -1, kMetaDevice = -2, kOtherDevice = -3;
};

/// "cpu", "meta", "cuda:N" for a TensorMeta::device value.
std::string deviceName(int device);

/// Imports torch and caches the objects the extension uses; false (with a
/// Python error set) when torch is missing.
bool initTorchHandles();

/// True when `obj` is a torch.Tensor (including Parameter).
bool isTensor(PyObject *obj);
/// Reads the metadata of tensor `t`; false with a Python error on failure.
bool readTensorMeta(PyObject *t, TensorMeta &meta);
/// The hot-path tensor guard: whether `t` is a CPU tensor with exactly this
/// dtype, sizes, strides and requires_grad. Reads each attribute once and
/// compares in place (no vectors); false on mismatch or error (cleared).
/// `device` (TensorMeta::device) other than the CPU is compared through
/// `t.device` (the CUDA backend's entries; the CPU check stays the fast one).
bool tensorMetaMatches(PyObject *t, PyObject *dtype, const std::vector<int64_t> &sizes,
                       const std::vector<int64_t> &strides, bool requiresGrad,
                       int device = TensorMeta::kCpuDevice);
/// `t.data_ptr()`; nullptr with a Python error on failure.
void *tensorDataPtr(PyObject *t);
/// `t.untyped_storage().data_ptr()` (`t` borrowed): tensors that share
/// storage (views of one another) give the same address; nullptr (error
/// cleared) when it cannot be read or the storage is empty.
void *tensorStoragePtr(PyObject *t);
/// `torch.get_num_threads()` (1 on error).
int torchNumThreads();
/// `torch.is_grad_enabled()`.
bool gradEnabled();
/// `torch.get_default_dtype()` as one of the dtype singletons kiln holds
/// (borrowed), or null for a dtype kiln does not support.
PyObject *defaultDtype();
/// `torch.empty(sizes, dtype=dtype)` (new reference, null on error).
PyObject *emptyTensor(const std::vector<int64_t> &sizes, PyObject *dtype);
/// `torch.empty(size=size, dtype=dtype)` with a prebuilt size tuple (new
/// reference, null on error). The kwargs dict is built per call by CPython,
/// so nothing torch could mutate is shared between calls. When `dtype` is
/// torch's current default dtype (`dtypeIsDefault`, the caller guarantees
/// it) and `size` is not empty this is `torch.empty(*size)`, which parses
/// faster.
PyObject *emptyTensorPrebuilt(PyObject *size, PyObject *dtype, bool dtypeIsDefault);
/// `tuple(sizes)` (new reference, null on error).
PyObject *intTuple(const std::vector<int64_t> &sizes);
/// `t.contiguous()` (new reference, null on error).
PyObject *contiguousTensor(PyObject *t);
/// The `torch` module (borrowed).
PyObject *torchModule();
/// `torch.Size` (borrowed).
PyObject *torchSizeType();

} // namespace kiln

#endif // KILN_FRONTEND_TENSORINFO_H
