//===- CudaEntry.h - compiled entries that run on the CUDA backend -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// When every tensor input of a captured graph is on a CUDA device (or on
// `meta`: a dry run), the graph is compiled by kiln.cuda (the CUDA emitter,
// NVRTC, libkiln_cuda) instead of the CPU JIT: the entry then holds a
// Python runner (a kiln.cuda.CudaGraph) that takes the graph inputs and
// returns the graph results, allocated by torch on the inputs' device.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CUDAENTRY_H
#define KILN_FRONTEND_CUDAENTRY_H

#include "Entry.h"

#include <string>
#include <vector>

namespace kiln {

/// The device all graph inputs are on (TensorMeta::device: -1 CPU, -2
/// meta, >= 0 CUDA index; -1 for a graph without tensor inputs). False
/// with `error` set when inputs are on different devices.
bool graphDevice(const std::vector<GraphInput> &inputs, const std::vector<Guard> &guards,
                 int &device, std::string &error);

/// Compiles `irText` (the captured module) for `device` through
/// kiln.cuda._frontend.compile_graph and stores the runner in
/// `entry.cudaRunner`. False with `error` set (no Python error) when the
/// CUDA backend cannot compile the graph: the frame then runs eagerly.
bool compileForCuda(const std::string &irText, int device, Entry &entry, std::string &error);

/// runGraph for an entry with a cudaRunner.
bool runCudaGraph(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                  std::vector<PyRef> &results);

} // namespace kiln

#endif // KILN_FRONTEND_CUDAENTRY_H
