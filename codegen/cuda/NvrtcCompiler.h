//===- NvrtcCompiler.h - CUDA C++ → PTX / cubin with NVRTC --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Compiles the CUDA emitter's source with NVRTC (no device or driver
// needed). Built only when CMake finds the CUDA toolkit's NVRTC
// (KILN_HAVE_NVRTC); links CUDA::nvrtc, never the driver.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_NVRTCCOMPILER_H
#define KILN_CODEGEN_CUDA_NVRTCCOMPILER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::kiln::cuda {

struct NvrtcOptions {
  int arch = 80;     // sm_<arch>: 80 (A100), 90 (H100/H200)
  bool cubin = true; // true: SASS for sm_<arch>; false: PTX for compute_<arch>
  bool lineInfo = false;
  /// Where <cuda_fp16.h> / <cuda_bf16.h> live (NVRTC 13 does not have them
  /// built in); defaults to the toolkit's include dir found by CMake.
  std::string includeDir = defaultIncludeDir();
  static std::string defaultIncludeDir();
};

struct NvrtcResult {
  std::string binary; // cubin bytes or PTX text
  std::string log;    // NVRTC's log (warnings), may be empty
  double seconds = 0; // wall time of nvrtcCompileProgram
};

/// Compiles `source` (program name `name`). On failure the error message
/// carries NVRTC's status and log and the numbered source.
llvm::Expected<NvrtcResult> compileWithNvrtc(llvm::StringRef source, llvm::StringRef name,
                                             const NvrtcOptions &options);

/// "major.minor" of the NVRTC library in use.
std::string nvrtcVersion();

} // namespace mlir::kiln::cuda

#endif // KILN_CODEGEN_CUDA_NVRTCCOMPILER_H
