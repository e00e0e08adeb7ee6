//===- AutocastPolicy.cpp - CPU autocast's per-op cast policy -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The cast policy of AutocastPolicy.h, by kiln op name (the registry maps
// torch.mm/bmm/matmul/`@` to `matmul`, F.scaled_dot_product_attention to
// `sdpa`). The casts are ordinary `kiln.cast` ops, so the compiled backward
// differentiates them like eager's `_to_copy`. einsum breaks: eager casts
// only the contractions it runs through bmm.
//===----------------------------------------------------------------------===//
#include "capture/ops/AutocastPolicy.h"
#include "capture/interp/Autocast.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/ops/TorchOpsImpl.h"
#include "TensorInfo.h"

#include <unordered_set>

namespace kiln {
namespace {

enum class Policy { None, Lower, Float32 };

Policy policyOf(const std::string &op, const Args &a) {
  static const std::unordered_set<std::string> lower = {"matmul", "linear", "addmm", "baddbmm",
                                                        "conv1d", "conv2d", "prelu", "sdpa"};
  static const std::unordered_set<std::string> float32 = {"binary_cross_entropy",
                                                          "binary_cross_entropy_with_logits",
                                                          "cross_entropy",
                                                          "nll_loss",
                                                          "mse_loss",
                                                          "l1_loss",
                                                          "smooth_l1_loss",
                                                          "huber_loss",
                                                          "kl_div",
                                                          "prod"};
  if (lower.count(op))
    return Policy::Lower;
  if (float32.count(op))
    return Policy::Float32;
  if (op == "pad") { // reflection_pad*/replication_pad* are in the fp32 list
    std::string mode = strArg(a, "mode", "constant");
    return mode == "reflect" || mode == "replicate" ? Policy::Float32 : Policy::None;
  }
  if (op == "einsum")
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "torch.einsum under torch.autocast: eager casts only the contractions it "
                      "runs through bmm, which kiln's einsum does not reproduce");
  return Policy::None;
}

/// Casts the tensor arguments autocast would cast to `target`.
void castArguments(Interpreter &I, const std::string &op, Args &a, DType target) {
  Emit e(I);
  for (auto &[name, v] : a.named) {
    if (!v || !v->isTensor())
      continue;
    DType d = dtypeOfValue(v->value);
    // eager's is_eligible: floating, not float64; fp32 ops cast only narrow types
    bool eligible = target == DType::F32 ? isNarrow(d) : d == DType::F32 || isNarrow(d);
    if (!eligible || d == target)
      continue;
    if (v->vmapLevels > 0)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        op + " under torch.autocast on a tensor batched by torch.vmap");
    v = T(e.cast(v->value, target));
  }
}

} // namespace

AutocastScope::AutocastScope(Interpreter &I, const OpDef &op, Args &a) : I(I) {
  if (std::optional<DType> lower = autocastForOp(I)) {
    std::optional<int> device = CaptureTimeCalls::graphDevice(I);
    bool cpu = !device || *device == TensorMeta::kCpuDevice;
    Policy p = cpu ? policyOf(op.name, a) : Policy::None; // CPU autocast leaves CUDA ops alone
    if (p != Policy::None)
      castArguments(I, op.name, a, p == Policy::Lower ? *lower : DType::F32);
  }
  autocastOpDepth(I, +1);
}

AutocastScope::~AutocastScope() { autocastOpDepth(I, -1); }

} // namespace kiln
