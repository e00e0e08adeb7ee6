//===- NvrtcCompiler.cpp - CUDA C++ → PTX / cubin with NVRTC ------------------===//
// SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//
#include "codegen/cuda/NvrtcCompiler.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <nvrtc.h>

#include <chrono>
#include <vector>

namespace mlir::kiln::cuda {

std::string NvrtcOptions::defaultIncludeDir() {
#ifdef KILN_CUDA_INCLUDE_DIR
  return KILN_CUDA_INCLUDE_DIR;
#else
  return "/usr/local/cuda/include";
#endif
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

static llvm::Error failure(llvm::StringRef what, nvrtcResult status, llvm::StringRef log,
                           llvm::StringRef source, const NvrtcOptions &o) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << "NVRTC " << what << " failed for sm_" << o.arch << ": " << nvrtcGetErrorString(status)
     << "\n--- NVRTC log ---\n"
     << log << "\n--- source ---\n";
  int line = 1;
  os << llvm::format_decimal(line, 4) << "  ";
  for (char c : source) {
    os << c;
    if (c == '\n')
      os << llvm::format_decimal(++line, 4) << "  ";
  }
  os << "\n";
  return llvm::createStringError(llvm::inconvertibleErrorCode(), os.str());
}

llvm::Expected<NvrtcResult> compileWithNvrtc(llvm::StringRef source, llvm::StringRef name,
                                             const NvrtcOptions &options) {
  std::string src = source.str(), nm = name.str();
  nvrtcProgram prog;
  nvrtcResult st = nvrtcCreateProgram(&prog, src.c_str(), nm.c_str(), 0, nullptr, nullptr);
  if (st != NVRTC_SUCCESS)
    return failure("program creation", st, "", source, options);

  std::string arch = std::string("--gpu-architecture=") + (options.cubin ? "sm_" : "compute_") +
                     std::to_string(options.arch);
  std::string include = "--include-path=" + options.includeDir;
  std::vector<const char *> opts = {arch.c_str(), "--std=c++17"};
  if (!options.includeDir.empty())
    opts.push_back(include.c_str());
  if (options.lineInfo)
    opts.push_back("--generate-line-info");

  auto start = std::chrono::steady_clock::now();
  st = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  NvrtcResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    result.log.resize(logSize);
    nvrtcGetProgramLog(prog, result.log.data());
    result.log.resize(logSize - 1);
  }
  if (st != NVRTC_SUCCESS) {
    llvm::Error e = failure("compilation", st, result.log, source, options);
    nvrtcDestroyProgram(&prog);
    return std::move(e);
  }

  size_t size = 0;
  st = options.cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size);
  if (st == NVRTC_SUCCESS) {
    result.binary.resize(size);
    st = options.cubin ? nvrtcGetCUBIN(prog, result.binary.data())
                       : nvrtcGetPTX(prog, result.binary.data());
    if (!options.cubin && !result.binary.empty() && result.binary.back() == '\0')
      result.binary.pop_back();
  }
  nvrtcDestroyProgram(&prog);
  if (st != NVRTC_SUCCESS)
    return failure(options.cubin ? "cubin retrieval" : "PTX retrieval", st, result.log, source,
                   options);
  return result;
}

} // namespace mlir::kiln::cuda
