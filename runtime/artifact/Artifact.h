//===- Artifact.h - opening and validating a .kiln file -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Maps a .kiln artifact read-only and checks all of it before anything
// uses it: magic, version, file size, the section table's CRC, every
// section's bounds, alignment, kind and CRC, then the plan (Plan.h); it
// also compares the CPU features the code needs (Meta section) with this
// CPU's (Model picks the baseline build, or refuses, when they miss). A bad
// file is an Error with a code and a sentence, never a crash.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_ARTIFACT_H
#define KILN_RUNTIME_ARTIFACT_ARTIFACT_H

#include "runtime/artifact/CudaSection.h"
#include "runtime/artifact/Plan.h"
#include "runtime/artifact/kiln_runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln::rt::artifact {

/// A failure: a kiln_status code and what went wrong.
struct Error {
  kiln_status code = KILN_OK;
  std::string message;
  explicit operator bool() const { return code != KILN_OK; }
};

/// A validated artifact; its sections point into the read-only mapping,
/// which lives as long as the Artifact.
class Artifact {
public:
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  /// Maps and validates `path`; null with `error` set on any problem.
  static std::unique_ptr<Artifact> open(const std::string &path, Error &error);

  std::string_view meta() const { return meta_; }
  /// The library for the exporting machine's CPU, and the baseline build
  /// ("" when the artifact has none).
  std::string_view code() const { return code_; }
  std::string_view baselineCode() const { return baselineCode_; }
  /// A CPU feature code() needs that this CPU lacks ("" when it runs here).
  const std::string &missingFeature() const { return missingFeature_; }
  const uint8_t *weights() const { return weights_; }
  uint64_t weightsSize() const { return weightsSize_; }
  const Plan &plan() const { return plan_; }
  /// The CUDA plan and images (target "cuda:..."), or null.
  const CudaSection *cuda() const { return hasCuda_ ? &cuda_ : nullptr; }
  /// The value of `key` in the Meta section ("" when absent).
  std::string metaValue(std::string_view key) const;

private:
  Artifact() = default;
  Error validate();

  void *map_ = nullptr;
  uint64_t size_ = 0;
  std::string_view meta_, code_, baselineCode_;
  std::string missingFeature_;
  const uint8_t *weights_ = nullptr;
  uint64_t weightsSize_ = 0;
  Plan plan_;
  bool hasCuda_ = false;
  CudaSection cuda_;
};

/// CRC-32 (zlib's polynomial) of `size` bytes at `data`, and `crc`
/// continued over them (Crc32.cpp: folded with PCLMULQDQ where the CPU
/// has it).
uint32_t crc32Of(const void *data, uint64_t size);
uint32_t crc32Update(uint32_t crc, const void *data, uint64_t size);

/// The first CPU feature in `features` ("+avx2,+fma,-avx512f,...": the
/// exporting machine's LLVM target features) that this CPU lacks, or "".
std::string missingCpuFeature(std::string_view features);

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_ARTIFACT_H
