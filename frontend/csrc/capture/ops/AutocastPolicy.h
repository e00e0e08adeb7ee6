//===- AutocastPolicy.h - CPU autocast's per-op cast policy -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// While CPU autocast is on in the capture (interp/Autocast.h), each mapped
// op called by the user's code gets eager's cast policy for its arguments
// (ATen's autocast_mode.cpp, AutocastCPU): ops of the lower-precision list
// (matmul/mm/bmm, linear, addmm, baddbmm, conv1d/2d, prelu,
// scaled_dot_product_attention) cast their floating tensor arguments other
// than float64 to the region's dtype; ops of the fp32 list (losses, prod,
// reflect/replicate padding) cast bf16/f16 arguments to float32; every
// other op runs in its inputs' dtypes (type promotion as in eager). Ops
// built inside another op's handler are not re-cast.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_OPS_AUTOCASTPOLICY_H
#define KILN_FRONTEND_CAPTURE_OPS_AUTOCASTPOLICY_H

#include "capture/ops/OpRegistry.h"

namespace kiln {

/// Applies the policy to `a` (replacing cast arguments) for the lifetime
/// of the scope, which brackets the op's handler; Unsupported for an op
/// whose eager autocast behaviour kiln does not reproduce (einsum).
class AutocastScope {
public:
  AutocastScope(Interpreter &I, const OpDef &op, Args &a);
  ~AutocastScope();
  AutocastScope(const AutocastScope &) = delete;
  AutocastScope &operator=(const AutocastScope &) = delete;

private:
  Interpreter &I;
};

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_OPS_AUTOCASTPOLICY_H
