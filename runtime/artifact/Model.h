//===- Model.h - a loaded artifact, ready to run ------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A validated Artifact plus its code: the CPU code section (an ELF shared
// library) is written to an anonymous memory file (memfd) and dlopen'ed
// from there (no file on disk, no LLVM: see docs/deployment.md for why a
// shared library and not the JIT's relocatable object); its import table
// is filled from kiln's run-time functions (Imports.h). run() checks the
// caller's tensors against the plan, binds the symbolic dims, builds the
// memref descriptors (inputs, then weights in the mapping, then outputs)
// and calls the packed entry. It keeps no state between calls, so any
// number of threads may run one Model at once.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_MODEL_H
#define KILN_RUNTIME_ARTIFACT_MODEL_H

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/CudaModel.h"

#include <vector>

namespace kiln::rt::artifact {

class Model {
public:
  ~Model();
  /// Validates `path` and loads its code for `device`: "cpu" (the host build,
  /// or the baseline build where this CPU lacks a feature the host build
  /// needs), "cpu-baseline" (the baseline build), "cuda" or "cuda:N" (the
  /// CUDA build on GPU N: CudaModel).
  static std::unique_ptr<Model> load(const std::string &path, const std::string &device,
                                     Error &error);

  const Plan &plan() const { return artifact_->plan(); }
  std::string_view meta() const { return artifact_->meta(); }
  /// Whether the baseline build runs (not the exporting CPU's).
  bool baseline() const { return baseline_; }
  /// The caller's input k / output k as the C API describes it (dims with
  /// -1 for symbolic ones).
  const TensorSpec &inputSpec(size_t k) const;
  const TensorSpec &outputSpec(size_t k) const;
  const std::vector<int64_t> &inputDims(size_t k) const { return inputDims_[k]; }
  const std::vector<int64_t> &outputDims(size_t k) const { return outputDims_[k]; }

  /// The symbol values these inputs give, after checking the inputs
  /// (count, device, dtype, rank, sizes, ranges, contiguity).
  Error bindInputs(const kiln_tensor *inputs, size_t n, std::vector<int64_t> &symbols) const;
  /// Output k's shape under `symbols`.
  std::vector<int64_t> outputShape(size_t k, const std::vector<int64_t> &symbols) const;
  /// Checks inputs and outputs and runs the compiled code (a CUDA model
  /// on `stream`, waiting for it unless `async`: CudaModel::run).
  Error run(const kiln_tensor *inputs, size_t numInputs, kiln_tensor *outputs, size_t numOutputs,
            void *stream = nullptr, bool async = false) const;

private:
  Model() = default;
  Error loadCode();
  /// Fills inputDims_ and outputDims_ from the plan.
  void describe();
  /// Checks the caller's outputs; `resultData[r]` becomes the memory of the
  /// first output returning graph result r.
  Error checkOutputs(const kiln_tensor *outputs, size_t numOutputs,
                     const std::vector<int64_t> &symbols, std::vector<void *> &resultData) const;

  std::unique_ptr<Artifact> artifact_;
  void *library_ = nullptr;
  int codeFd_ = -1;       ///< the memory file holding the library (see loadCode)
  bool baseline_ = false; ///< runs the baseline build
  void (*entry_)(void **) = nullptr;
  std::unique_ptr<CudaModel> cuda_; ///< the CUDA build, for a CUDA device
  std::vector<std::vector<int64_t>> inputDims_, outputDims_;
};

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_MODEL_H
