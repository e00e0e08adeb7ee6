// SPDX-License-Identifier: Apache-2.0
// Shared by the fake driver (fake_libcuda.c) and the fake cuBLASLt
// (fake_cublaslt.c), which are linked into one library: work submitted to
// a stream runs now, or is recorded as a graph node while the stream is
// being captured.
#ifndef KILN_FAKE_CUDA_H
#define KILN_FAKE_CUDA_H
#include <stddef.h>

typedef void (*FakeNodeFn)(void *payload);
typedef void (*HostKernel)(void **ptrs, unsigned grid, unsigned block);

/// Runs fn(copy of payload) now, or records it if `stream` is capturing.
void fake_submit(void *stream, FakeNodeFn fn, const void *payload, size_t size);

#endif
