//===- CudaSection.h - an artifact's CUDA plan and images -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The CudaPlan section of a .kiln artifact exported with target="cuda:..."
// (frontend/python/kiln/_export_cuda.py writes it): how the graph runs on a
// GPU, on top of the Plan section's inputs and results. Text:
//
//   kiln-cuda 1
//   arena <bytes>                 scratch memory the launch plan needs
//   images <n>                    then n lines: image <name> <offset> <size>
//                                 (name: an sm arch "80", "ptx" or "cuda",
//                                 the CUDA C++ source; a range of the
//                                 CudaImages section)
//   results <n>                   then n lines, in result order:
//                                 result <r> out <j> (the launch plan's output j)
//   spec                          then the rest: runtime/cuda/Plan.h's spec,
//                                 verbatim (its inputs are the Plan
//                                 section's inputs, in call order)
//
// Checked before use (Artifact::open): counts, image ranges inside the
// CudaImages section, results numbered in order, the spec's header
// matching the Plan section; runtime/cuda's Plan::create parses the spec
// itself when a device loads it.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_CUDASECTION_H
#define KILN_RUNTIME_ARTIFACT_CUDASECTION_H

#include "runtime/artifact/Plan.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt::artifact {

struct CudaImage {
  std::string name; ///< "80", "90", ..., "ptx" or "cuda"
  std::string_view bytes;
};

struct CudaSection {
  uint64_t arenaBytes = 0;
  std::vector<CudaImage> images;
  std::vector<int> resultOutput; ///< launch-plan output of each graph result
  int numPlanOutputs = 0;
  std::string spec; ///< runtime/cuda/Plan.h's spec

  /// The image for compute capability `arch` (major * 10 + minor): its
  /// cubin, else the PTX; null when neither is there.
  const CudaImage *imageFor(int arch) const;
  /// "sm_80, sm_90, PTX": what the artifact holds, for messages.
  std::string describeImages() const;
};

/// Parses `text` (the CudaPlan section) against `images` (the CudaImages
/// section) and the already parsed Plan section; false with `error` set.
bool parseCudaSection(std::string_view text, std::string_view images, const Plan &plan,
                      CudaSection &out, std::string &error);

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_CUDASECTION_H
