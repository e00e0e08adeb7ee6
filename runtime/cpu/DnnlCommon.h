//===- DnnlCommon.h - what kiln's oneDNN shims share ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The CPU engine and the OpenMP thread setting of the oneDNN convolution
// shims (DnnlConv.cpp: f32, DnnlQConv.cpp: static int8). Included only by
// sources built with oneDNN (KILN_HAVE_DNNL).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_DNNLCOMMON_H
#define KILN_RUNTIME_CPU_DNNLCOMMON_H

#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::rt {
/// The one oneDNN CPU engine.
dnnl::engine &dnnlEngine();
/// Sets the calling thread's OpenMP thread count to kiln's (oneDNN runs on
/// the caller's OpenMP team) and returns it. Every primitive cache key ends
/// with it: a primitive partitions its work for the thread count it was
/// created at (one created at 1 thread ran resnet50's convolutions on one
/// core after torch.set_num_threads(2): 68 instead of 37 ms).
int dnnlApplyThreads();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_DNNLCOMMON_H
