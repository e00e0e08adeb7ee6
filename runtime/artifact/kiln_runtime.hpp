//===- kiln_runtime.hpp - header-only C++ wrapper of the C API ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// RAII over kiln_runtime.h: kiln::Model owns a loaded model (moved, never
// copied) and throws kiln::Error (status + message) on failure;
// kiln::TensorView describes a contiguous buffer of the caller's.
//
//   kiln::Model model("mlp.kiln");
//   std::vector<float> x(8 * 784), y(8 * 10);
//   model.run({kiln::TensorView(x.data(), {8, 784})},
//             {kiln::TensorView(y.data(), {8, 10})});
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_HPP
#define KILN_RUNTIME_HPP

#include "kiln_runtime.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

/// A failed kiln_* call: its status and kiln_last_error()'s message.
class Error : public std::runtime_error {
public:
  Error(kiln_status status, const std::string &message)
      : std::runtime_error(std::string(kiln_status_name(status)) + ": " + message),
        status_(status) {}
  kiln_status status() const { return status_; }

private:
  kiln_status status_;
};

inline void check(kiln_status s) {
  if (s != KILN_OK)
    throw Error(s, kiln_last_error());
}

/// A contiguous CPU tensor over caller memory (the shape is owned here).
class TensorView {
public:
  template <typename T> TensorView(T *data, std::vector<int64_t> shape) : shape_(std::move(shape)) {
    kiln_dtype dtype{0, (uint8_t)(8 * sizeof(T)), 1};
    if (std::is_same_v<std::remove_cv_t<T>, bool>)
      dtype.code = 6;
    else if (std::is_floating_point_v<T>)
      dtype.code = 2;
    init(const_cast<std::remove_cv_t<T> *>(data), dtype);
  }
  TensorView(void *data, kiln_dtype dtype, std::vector<int64_t> shape) : shape_(std::move(shape)) {
    init(data, dtype);
  }
  TensorView(const TensorView &o) : tensor_(o.tensor_), shape_(o.shape_) {
    tensor_.shape = shape_.data();
  }
  const kiln_tensor &get() const { return tensor_; }

private:
  void init(void *data, kiln_dtype dtype) {
    tensor_ = kiln_tensor{data, {1, 0}, (int32_t)shape_.size(), dtype, shape_.data(), nullptr, 0};
  }
  kiln_tensor tensor_;
  std::vector<int64_t> shape_;
};

/// A loaded model; run() may be called from several threads at once.
class Model {
public:
  explicit Model(const std::string &path, const std::string &device = "cpu") {
    check(kiln_model_load(path.c_str(), device.c_str(), &model_));
  }
  Model(Model &&o) noexcept : model_(std::exchange(o.model_, nullptr)) {}
  Model &operator=(Model &&o) noexcept {
    std::swap(model_, o.model_);
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { kiln_model_free(model_); }

  size_t numInputs() const { return kiln_model_num_inputs(model_); }
  size_t numOutputs() const { return kiln_model_num_outputs(model_); }
  /// Output `index`'s shape for these inputs.
  std::vector<int64_t> outputShape(const std::vector<TensorView> &inputs, size_t index) const {
    int32_t ndim = 0;
    check(kiln_model_output_info(model_, index, nullptr, nullptr, &ndim, nullptr));
    std::vector<kiln_tensor> in = raw(inputs);
    std::vector<int64_t> shape(ndim);
    check(kiln_model_output_shape(model_, in.data(), in.size(), index, shape.data()));
    return shape;
  }
  void run(const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs) const {
    std::vector<kiln_tensor> in = raw(inputs), out = raw(outputs);
    check(kiln_model_run(model_, in.data(), in.size(), out.data(), out.size()));
  }
  /// A CUDA model on `stream` (a CUstream), not waited for when every
  /// tensor is on the GPU (kiln_model_run_async).
  void runAsync(const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs,
                void *stream) const {
    std::vector<kiln_tensor> in = raw(inputs), out = raw(outputs);
    check(kiln_model_run_async(model_, in.data(), in.size(), out.data(), out.size(), stream));
  }
  const kiln_model *get() const { return model_; }

private:
  static std::vector<kiln_tensor> raw(const std::vector<TensorView> &views) {
    std::vector<kiln_tensor> r;
    for (const TensorView &v : views)
      r.push_back(v.get());
    return r;
  }
  kiln_model *model_ = nullptr;
};

} // namespace kiln

#endif // KILN_RUNTIME_HPP
