//===- CallHooks.h - what compiled code asks the frontend during a call -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Two calls the JIT'd code makes back into the frontend while it runs,
// both from the calling thread, outside parallel regions:
//  * kilnOutputData, right before its first write to an output the
//    frontend passed without memory (a result marked `kiln.lazy_output`,
//    codegen/cpu/LazyOutputs.cpp): the caller's tensor is allocated where
//    eager would allocate it, after the intermediates that died before it;
//  * kilnReleaseInput, right after its last read of an input the frontend
//    holds the only reference to (a backward's saved activations,
//    codegen/cpu/ReleaseDeadInputs.cpp): its memory goes back to torch
//    while the backward still runs, as eager frees a node's saved tensors.
// The frontend installs the hooks for the call (a CallHooksScope on the
// calling thread).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_CALLHOOKS_H
#define KILN_RUNTIME_CPU_CALLHOOKS_H

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// The data pointer of output `index` (its position among the function's
/// results), `bytes` long. Without hooks (a bug: the frontend installs them
/// around every call) it prints why and aborts.
void *kilnOutputData(int64_t index, int64_t bytes);
/// The code is done with input `index`; without hooks nothing happens.
void kilnReleaseInput(int64_t index);
}

namespace kiln::rt {

/// The frontend's side of one call. `allocateOutput` must not return null
/// (it may hand out scratch memory and report the failure after the call).
struct CallHooks {
  void *(*allocateOutput)(void *context, int64_t index, int64_t bytes) = nullptr;
  void (*releaseInput)(void *context, int64_t index) = nullptr;
  void *context = nullptr;
};

/// Installs `hooks` on this thread for its lifetime (nests: a call made
/// from a hook, or from a finalizer the garbage collector runs there, gets
/// its own and the outer ones are back after it).
class CallHooksScope {
public:
  explicit CallHooksScope(const CallHooks &hooks);
  ~CallHooksScope();
  CallHooksScope(const CallHooksScope &) = delete;
  CallHooksScope &operator=(const CallHooksScope &) = delete;

private:
  CallHooks prev_;
};

/// kilnOutputData and kilnReleaseInput for the JIT's symbol table.
std::vector<std::pair<const char *, void *>> callHookSymbols();

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_CALLHOOKS_H
