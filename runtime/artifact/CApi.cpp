//===- CApi.cpp - the C API of libkiln_runtime --------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements kiln_runtime.h on Model.h: status codes and a per-thread last
// error. The library is built without exceptions: nothing throws across
// the C boundary (running out of memory aborts, as in the JIT path).
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Model.h"
#include "runtime/artifact/kiln_runtime.h"

#include "runtime/cpu/BlasShims.h"
#include "runtime/cpu/Threads.h"
#include "runtime/cuda/Cublaslt.h"
#include "runtime/cuda/CudaDriver.h"

#include <string>

using kiln::rt::artifact::Error;
using kiln::rt::artifact::Model;

struct kiln_model {
  std::unique_ptr<Model> model;
  std::string meta; ///< the Meta section, NUL-terminated
};

namespace {

thread_local std::string lastError;

kiln_status report(const Error &e) {
  lastError = e.message;
  return e.code;
}

kiln_status invalid(const char *what) {
  lastError = what;
  return KILN_ERROR_INVALID_ARGUMENT;
}

kiln_status describe(const kiln::rt::artifact::TensorSpec &spec, const std::string &name,
                     const std::vector<int64_t> &dims, const char **nameOut, kiln_dtype *dtype,
                     int32_t *ndim, const int64_t **dimsOut) {
  if (nameOut)
    *nameOut = name.c_str();
  if (dtype) {
    kiln::rt::artifact::dtypeToDLPack(spec.dtype, dtype->code, dtype->bits);
    dtype->lanes = 1;
  }
  if (ndim)
    *ndim = (int32_t)dims.size();
  if (dimsOut)
    *dimsOut = dims.data();
  return KILN_OK;
}

} // namespace

extern "C" {

const char *kiln_last_error(void) { return lastError.c_str(); }

const char *kiln_status_name(kiln_status s) {
  static const char *names[] = {"KILN_OK",
                                "KILN_ERROR_IO",
                                "KILN_ERROR_FORMAT",
                                "KILN_ERROR_VERSION",
                                "KILN_ERROR_CHECKSUM",
                                "KILN_ERROR_UNSUPPORTED",
                                "KILN_ERROR_CODE",
                                "KILN_ERROR_INVALID_ARGUMENT",
                                "KILN_ERROR_SHAPE",
                                "KILN_ERROR_DTYPE",
                                "KILN_ERROR_DEVICE",
                                "KILN_ERROR_INDEX",
                                "KILN_ERROR_DRIVER"};
  unsigned i = (unsigned)s;
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "KILN_ERROR_UNKNOWN";
}

kiln_status kiln_model_load(const char *path, const char *device, kiln_model **model) {
  if (!path || !model)
    return invalid("kiln_model_load: null path or model pointer");
  *model = nullptr;
  Error error;
  std::unique_ptr<Model> m = Model::load(path, device ? device : "cpu", error);
  if (!m)
    return report(error);
  std::string meta(m->meta());
  *model = new kiln_model{std::move(m), std::move(meta)};
  return KILN_OK;
}

void kiln_model_free(kiln_model *model) { delete model; }

const char *kiln_model_meta(const kiln_model *m) { return m ? m->meta.c_str() : ""; }

size_t kiln_model_num_inputs(const kiln_model *m) {
  return m ? m->model->plan().userInputs.size() : 0;
}
size_t kiln_model_num_outputs(const kiln_model *m) {
  return m ? m->model->plan().outputs.size() : 0;
}
size_t kiln_model_num_symbols(const kiln_model *m) {
  return m ? m->model->plan().symbols.size() : 0;
}

kiln_status kiln_model_input_info(const kiln_model *m, size_t i, const char **name,
                                  kiln_dtype *dtype, int32_t *ndim, const int64_t **dims) {
  if (!m || i >= kiln_model_num_inputs(m))
    return invalid("kiln_model_input_info: no such model or input");
  const auto &spec = m->model->inputSpec(i);
  return describe(spec, spec.name, m->model->inputDims(i), name, dtype, ndim, dims);
}

kiln_status kiln_model_output_info(const kiln_model *m, size_t i, const char **name,
                                   kiln_dtype *dtype, int32_t *ndim, const int64_t **dims) {
  if (!m || i >= kiln_model_num_outputs(m))
    return invalid("kiln_model_output_info: no such model or output");
  return describe(m->model->outputSpec(i), m->model->plan().outputNames[i], m->model->outputDims(i),
                  name, dtype, ndim, dims);
}

kiln_status kiln_model_symbol_info(const kiln_model *m, size_t i, const char **name, int64_t *min,
                                   int64_t *max) {
  if (!m || i >= kiln_model_num_symbols(m))
    return invalid("kiln_model_symbol_info: no such model or symbol");
  const auto &s = m->model->plan().symbols[i];
  if (name)
    *name = s.name.c_str();
  if (min)
    *min = s.min;
  if (max)
    *max = s.max;
  return KILN_OK;
}

kiln_status kiln_model_output_shape(const kiln_model *m, const kiln_tensor *inputs,
                                    size_t numInputs, size_t index, int64_t *shape) {
  if (!m || !shape || index >= kiln_model_num_outputs(m))
    return invalid("kiln_model_output_shape: no such model or output, or null shape");
  std::vector<int64_t> symbols;
  if (Error err = m->model->bindInputs(inputs, numInputs, symbols))
    return report(err);
  std::vector<int64_t> s = m->model->outputShape(index, symbols);
  for (size_t d = 0; d < s.size(); ++d)
    shape[d] = s[d];
  return KILN_OK;
}

kiln_status kiln_model_run(const kiln_model *m, const kiln_tensor *inputs, size_t numInputs,
                           kiln_tensor *outputs, size_t numOutputs) {
  if (!m)
    return invalid("kiln_model_run: null model");
  if (Error err = m->model->run(inputs, numInputs, outputs, numOutputs))
    return report(err);
  return KILN_OK;
}

kiln_status kiln_model_run_async(const kiln_model *m, const kiln_tensor *inputs, size_t numInputs,
                                 kiln_tensor *outputs, size_t numOutputs, void *stream) {
  if (!m)
    return invalid("kiln_model_run_async: null model");
  if (Error err = m->model->run(inputs, numInputs, outputs, numOutputs, stream, true))
    return report(err);
  return KILN_OK;
}

void kiln_set_num_threads(int threads) { kilnSetNumThreads(threads); }

int kiln_set_blas_library(const char *path) { return kilnSetBlasLibrary(path ? path : ""); }

void kiln_set_cuda_libraries(const char *driver, const char *cublaslt) {
  kiln::rt::cuda::setDriverLibraryName(driver ? driver : "");
  kiln::rt::cuda::setCublasLtLibraryName(cublaslt ? cublaslt : "");
}

} // extern "C"
