//===- Format.h - the .kiln artifact's container format -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The byte layout kiln.export writes (frontend/python/kiln/_export.py) and
// the runtime reads (Artifact.cpp); docs/deployment.md describes it. All
// integers are little-endian. A 64-byte header, a table of sections right
// after it, then the sections, each at a multiple of 4096 (so the weights
// can be memory-mapped page-aligned):
//
//   header   magic "KILNMOD\0" | u32 version | u32 section count
//            | u64 file size | u32 CRC-32 of header[0,24) + section table
//            | u32 flags (0) | 32 bytes zero
//   section  u32 kind | u32 CRC-32 of the contents | u64 offset | u64 size
//            | u64 reserved (0)
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_FORMAT_H
#define KILN_RUNTIME_ARTIFACT_FORMAT_H

#include <cstdint>

namespace kiln::rt::artifact {

inline constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'M', 'O', 'D', '\0'};
/// The one container and plan version this runtime reads.
inline constexpr uint32_t kVersion = 1;
inline constexpr uint64_t kHeaderSize = 64;
inline constexpr uint64_t kSectionEntrySize = 32;
inline constexpr uint32_t kMaxSections = 16;
/// Sections start at multiples of this; weights inside the weights section
/// at multiples of kWeightAlign.
inline constexpr uint64_t kSectionAlign = 4096;
inline constexpr uint64_t kWeightAlign = 64;

/// What a section holds.
enum class SectionKind : uint32_t {
  Meta = 1,    ///< text "key: value" lines: toolchain identities, CPU features
  Plan = 2,    ///< text: entry symbol, imports, symbols, inputs, results (Plan.h)
  CpuCode = 3, ///< an ELF shared library for the exporting machine's CPU
  Weights = 4, ///< a safetensors file (tensors at kWeightAlign)
  Program = 5, ///< the captured kiln IR, for inspection only
  /// Optional: the same library for the architecture's baseline CPU
  /// (x86-64 without AVX), used where the CPU lacks the exporter's features.
  CpuCodeBaseline = 6,
  /// Optional (target "cuda:..."): the CUDA launch plan (CudaSection.h) and
  /// the images it loads (cubins per arch, PTX, the CUDA source), always
  /// both. An artifact has CPU code, CUDA sections or both.
  CudaPlan = 7,
  CudaImages = 8,
};
inline constexpr uint32_t kLastSectionKind = 8;

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_FORMAT_H
