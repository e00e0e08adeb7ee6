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
/// the caller's OpenMP team).
void dnnlApplyThreads();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_DNNLCOMMON_H
