//===- CudaModel.cpp - an artifact's CUDA build, loaded on a device -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CudaModel.h on runtime/cuda (Module, Plan, DeviceMemory).
//===----------------------------------------------------------------------===//
#include "runtime/artifact/CudaModel.h"

#include <charconv>
#include <cstring>

namespace kiln::rt::artifact {
namespace {

Error fail(kiln_status code, std::string message) { return Error{code, std::move(message)}; }

size_t staticBytes(const TensorSpec &t) {
  size_t n = (size_t)dtypeBytes(t.dtype);
  for (const Dim &d : t.dims)
    n *= (size_t)d.size;
  return n;
}

void *at(const kiln_tensor &t) { return static_cast<char *>(t.data) + t.byte_offset; }

/// Driver problems (no driver, no device, no cuBLASLt) are KILN_ERROR_DRIVER.
Error driverError(const std::string &what, const std::string &why) {
  return fail(KILN_ERROR_DRIVER, what + ": " + why);
}

} // namespace

bool parseCudaDevice(const std::string &device, int &ordinal) {
  ordinal = 0;
  if (device == "cuda")
    return true;
  if (device.size() < 6 || device.compare(0, 5, "cuda:") != 0)
    return false;
  auto [end, ec] = std::from_chars(device.data() + 5, device.data() + device.size(), ordinal);
  return ec == std::errc() && end == device.data() + device.size() && ordinal >= 0;
}

std::unique_ptr<CudaModel> CudaModel::load(const Artifact &a, int device, Error &error) {
  const CudaSection *c = a.cuda();
  if (!c) {
    error = fail(KILN_ERROR_UNSUPPORTED,
                 "the artifact has no CUDA build (export it with target=\"cuda:sm_XX\")");
    return nullptr;
  }
  if (!a.plan().symbols.empty()) {
    error = fail(KILN_ERROR_UNSUPPORTED, "CUDA builds have static shapes only");
    return nullptr;
  }
  std::string why;
  int count = 0, major = 0, minor = 0;
  if (!cuda::deviceCount(count, why)) {
    error = fail(KILN_ERROR_DRIVER, why);
    return nullptr;
  }
  if (device >= count) {
    error = fail(KILN_ERROR_DEVICE, "device cuda:" + std::to_string(device) + ": the driver sees " +
                                        std::to_string(count) + " device(s)");
    return nullptr;
  }
  if (!cuda::deviceAttribute(device, cuda::kComputeCapabilityMajor, major, why) ||
      !cuda::deviceAttribute(device, cuda::kComputeCapabilityMinor, minor, why)) {
    error = driverError("cuda:" + std::to_string(device), why);
    return nullptr;
  }
  const CudaImage *image = c->imageFor(major * 10 + minor);
  if (!image) {
    error = fail(KILN_ERROR_UNSUPPORTED, "the artifact has " + c->describeImages() +
                                             " and no PTX; this GPU is sm_" +
                                             std::to_string(major * 10 + minor));
    return nullptr;
  }
  std::unique_ptr<CudaModel> m(new CudaModel());
  m->artifact_ = &a;
  m->device_ = device;
  m->module_ = cuda::Module::load(device, image->bytes.data(), image->bytes.size(), why);
  if (m->module_)
    m->plan_ = cuda::Plan::create(*m->module_, c->spec, why);
  if (!m->plan_) {
    error = fail(m->module_ ? KILN_ERROR_FORMAT : KILN_ERROR_CODE,
                 "loading the CUDA build (" + (image->name == "ptx" ? "PTX" : "sm_" + image->name) +
                     "): " + why);
    return nullptr;
  }
  if ((error = m->upload(a)))
    return nullptr;
  return m;
}

Error CudaModel::upload(const Artifact &a) {
  const Plan &p = a.plan();
  const CudaSection &c = *a.cuda();
  std::string why;
  if (!weights_.allocate(device_, a.weightsSize(), why) ||
      !weights_.upload(0, a.weights(), a.weightsSize(), why))
    return driverError("device memory for the weights", why);
  for (int g : p.userInputs)
    inputBytes_.push_back(staticBytes(p.inputs[g]));
  outputBytes_.assign(c.numPlanOutputs, 0);
  for (size_t r = 0; r < p.results.size(); ++r)
    outputBytes_[c.resultOutput[r]] = staticBytes(p.results[r]);
  Error error;
  scratchFor(nullptr, error); // the default stream's, allocated at load
  return error;
}

CudaModel::Scratch *CudaModel::scratchFor(cuda::CUstream stream, Error &error) {
  std::unique_ptr<Scratch> &slot = scratch_[stream];
  if (slot)
    return slot.get();
  auto s = std::make_unique<Scratch>();
  std::string why;
  bool ok = s->arena.allocate(device_, artifact_->cuda()->arenaBytes, why);
  for (auto *sizes : {&inputBytes_, &outputBytes_})
    for (size_t bytes : *sizes) {
      auto &list = sizes == &inputBytes_ ? s->inputs : s->outputs;
      list.push_back(std::make_unique<cuda::DeviceBuffer>());
      ok = ok && list.back()->allocate(device_, bytes, why);
    }
  if (!ok) {
    scratch_.erase(stream);
    error = driverError("device memory for the arena and staging buffers", why);
    return nullptr;
  }
  slot = std::move(s);
  return slot.get();
}

Error CudaModel::run(const kiln_tensor *inputs, kiln_tensor *outputs, size_t numOutputs,
                     cuda::CUstream stream, bool async) {
  const Plan &p = artifact_->plan();
  const CudaSection &c = *artifact_->cuda();
  std::lock_guard<std::mutex> hold(lock_);
  Error error;
  Scratch *scratch = scratchFor(stream, error);
  if (!scratch)
    return error;
  std::string why;
  bool onHost = false; // a host tensor: synchronous copies, and wait
  for (size_t k = 0; k < p.userInputs.size(); ++k)
    onHost = onHost || inputs[k].device.device_type != KILN_DEVICE_CUDA;
  for (size_t k = 0; k < numOutputs; ++k)
    onHost = onHost || outputs[k].device.device_type != KILN_DEVICE_CUDA;
  // Staging buffers may still be read by this stream's previous run.
  if (onHost && !cuda::synchronize(stream, why))
    return fail(KILN_ERROR_CODE, "waiting for the previous run: " + why);
  std::vector<void *> in(p.inputs.size()), out(scratch->outputs.size());
  for (size_t g = 0; g < p.inputs.size(); ++g) {
    const InputSpec &s = p.inputs[g];
    if (s.weight) {
      in[g] = static_cast<char *>(weights_.data()) + s.offset;
      continue;
    }
    const kiln_tensor &t = inputs[s.user];
    cuda::DeviceBuffer &stage = *scratch->inputs[s.user];
    in[g] = t.device.device_type == KILN_DEVICE_CUDA ? at(t) : stage.data();
    if (t.device.device_type != KILN_DEVICE_CUDA &&
        !stage.upload(0, at(t), inputBytes_[s.user], why))
      return driverError("copying input " + std::to_string(s.user) + " to the device", why);
  }
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = scratch->outputs[j]->data();
  // A caller's device output receives its result directly (the first one).
  std::vector<bool> direct(out.size(), false);
  for (size_t k = 0; k < numOutputs; ++k) {
    int j = c.resultOutput[p.outputs[k]];
    if (outputs[k].device.device_type == KILN_DEVICE_CUDA && !direct[j]) {
      out[j] = at(outputs[k]);
      direct[j] = true;
    }
  }
  if (!plan_->run(in.data(), out.data(), scratch->arena.data(), stream, why))
    return fail(why.find("cuBLASLt not found") != std::string::npos ? KILN_ERROR_DRIVER
                                                                    : KILN_ERROR_CODE,
                "running the CUDA plan: " + why);
  if ((error = deliver(outputs, numOutputs, out, stream)))
    return error;
  if ((!async || onHost || p.indexCheck >= 0) && !cuda::synchronize(stream, why))
    return fail(KILN_ERROR_CODE, "running the CUDA plan: " + why);
  if (p.indexCheck >= 0) {
    int64_t bad = 0;
    if (!cuda::copyToHost(device_, &bad, out[c.resultOutput[p.indexCheck]], sizeof(bad), why))
      return driverError("reading the index check", why);
    if (bad)
      return fail(KILN_ERROR_INDEX, "index out of range: an index input was outside the dim it "
                                    "reads; eager raises IndexError");
  }
  return {};
}

Error CudaModel::deliver(kiln_tensor *outputs, size_t numOutputs, const std::vector<void *> &out,
                         cuda::CUstream stream) {
  const Plan &p = artifact_->plan();
  const CudaSection &c = *artifact_->cuda();
  std::string why;
  bool waited = false;
  for (size_t k = 0; k < numOutputs; ++k) {
    int j = c.resultOutput[p.outputs[k]];
    void *dst = at(outputs[k]);
    if (dst == out[j])
      continue;
    bool ok;
    if (outputs[k].device.device_type == KILN_DEVICE_CUDA) {
      ok = cuda::copyOnDevice(device_, dst, out[j], outputBytes_[j], stream, why);
    } else {
      ok = (waited || (waited = cuda::synchronize(stream, why))) &&
           cuda::copyToHost(device_, dst, out[j], outputBytes_[j], why);
    }
    if (!ok)
      return driverError("copying output " + std::to_string(k) + " from the device", why);
  }
  return {};
}

} // namespace kiln::rt::artifact
