//===- CudaBindings.h - kiln._C bindings of the CUDA emitter ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Registers cuda_emit / nvrtc_compile / nvrtc_version / nvrtc_available on
// the extension module (CudaBindings.cpp).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CUDABINDINGS_H
#define KILN_FRONTEND_CUDABINDINGS_H

#include <nanobind/nanobind.h>

namespace kiln {

/// Adds the CUDA emitter and NVRTC functions to `m`.
void registerCudaBindings(nanobind::module_ &m);

} // namespace kiln

#endif // KILN_FRONTEND_CUDABINDINGS_H
