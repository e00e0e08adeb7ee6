//===- DnnlConvNone.cpp - DnnlConv.h without oneDNN ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Built instead of DnnlConv.cpp when CMake finds no oneDNN: reports that
// the shims are missing, so kiln-cpu-convs-to-dnnl is never scheduled and
// convolutions keep the im2col + GEMM lowering.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/DnnlConvBwd.h"
#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/WeightStamps.h"

extern "C" int64_t kilnDnnlConvCalls() { return -1; }

namespace kiln::rt {

bool haveDnnl() { return false; }

bool packedSgemm(const void *, bool, int64_t, int64_t, int64_t, const float *, int64_t,
                 const float *, int64_t, float, float *, int64_t) {
  return false;
}

std::vector<std::pair<const char *, void *>> dnnlShimSymbols() { return {}; }

} // namespace kiln::rt

extern "C" void kilnDnnlForgetWeights(uint64_t) {}

extern "C" int64_t kilnDnnlPackedBytes() { return -1; }

extern "C" int64_t kilnDnnlWeightPacks() { return -1; }

extern "C" void kilnDnnlConvRefuse(int64_t) {}

extern "C" int64_t kilnDnnlConvReferenceCalls() { return -1; }

extern "C" void kilnDnnlConvWinograd(int64_t) {}

extern "C" int64_t kilnDnnlWinogradCalls() { return -1; }

extern "C" void kilnDnnlQConvRefuse(int64_t) {}

extern "C" int64_t kilnDnnlQConvReferenceCalls() { return -1; }

extern "C" void kilnDnnlQConvPickLast(int64_t) {}

extern "C" int64_t kilnDnnlQConvAlternativesPicked() { return -1; }

extern "C" int64_t kilnDnnlQConvU8Outputs() { return -1; }

extern "C" int64_t kilnDnnlConvBwdCalls() { return -1; }

extern "C" int64_t kilnDnnlConvBwdReferenceCalls() { return -1; }

extern "C" void kilnDnnlConvBwdRefuse(int64_t) {}

extern "C" void kilnGemmForgetWeights(uint64_t) {}

extern "C" int64_t kilnGemmPackedBytes() { return -1; }

extern "C" int64_t kilnGemmWeightPacks() { return -1; }

extern "C" int64_t kilnGemmPackedCalls() { return -1; }
