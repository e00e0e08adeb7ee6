//===- Npy.h - reading NumPy .npy files for kiln-run --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The .npy format (versions 1-3, C order, little-endian or byte-sized
// types) as kiln_tensor views for the kiln-run tool.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_NPY_H
#define KILN_RUNTIME_ARTIFACT_NPY_H

#include "runtime/artifact/kiln_runtime.h"

#include <string>
#include <vector>

namespace kiln::rt::artifact {

/// An array read from a .npy file; `tensor()` views it.
struct NpyArray {
  std::vector<int64_t> shape;
  kiln_dtype dtype{2, 32, 1};
  std::vector<char> data;
  kiln_tensor tensor() {
    return kiln_tensor{data.data(), {1, 0}, (int32_t)shape.size(), dtype, shape.data(), nullptr, 0};
  }
};

/// Reads `path`; false with `error` set when it is not a C-order .npy file
/// of a supported dtype (f2/f4/f8, i4/i8, b1).
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_NPY_H
