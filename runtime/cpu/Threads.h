//===- Threads.h - thread count of kiln's CPU kernels -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The frontend sets the number of threads kiln's CPU code may use (BLAS
// included) to torch.get_num_threads(), so kiln and eager compete for the
// same cores in the same way.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_THREADS_H
#define KILN_RUNTIME_CPU_THREADS_H

extern "C" {
/// Sets the thread count of kiln's BLAS calls (applied by the next call;
/// n <= 0 leaves the BLAS library's own default).
void kilnSetNumThreads(int n);
/// The count last set by kilnSetNumThreads (0 when never set).
int kilnGetNumThreads();
}

#endif // KILN_RUNTIME_CPU_THREADS_H
