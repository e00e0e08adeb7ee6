/*===- kiln_runtime.h - C API of libkiln_runtime -----------------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Runs models exported by kiln.export (.kiln artifacts) without Python, MLIR
 * or LLVM. Load a model once, then run it from any number of threads at
 * once: kiln_model_run keeps no state between calls. Tensors are views of
 * the caller's memory with the layout of DLPack's DLTensor (a DLTensor * can
 * be passed as a kiln_tensor *). Every function returns a kiln_status; on
 * failure kiln_last_error() says what went wrong (per thread). See
 * docs/deployment.md.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_API __attribute__((visibility("default")))

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_IO = 1,               /* the file cannot be read */
  KILN_ERROR_FORMAT = 2,           /* not a valid artifact (magic, sizes, offsets, plan) */
  KILN_ERROR_VERSION = 3,          /* a format version this runtime does not read */
  KILN_ERROR_CHECKSUM = 4,         /* a section's contents are corrupt */
  KILN_ERROR_UNSUPPORTED = 5,      /* device or CPU features the artifact cannot run on */
  KILN_ERROR_CODE = 6,             /* the compiled code cannot be loaded */
  KILN_ERROR_INVALID_ARGUMENT = 7, /* null pointers, wrong counts */
  KILN_ERROR_SHAPE = 8,            /* an input's or output's shape violates the spec */
  KILN_ERROR_DTYPE = 9,            /* an input's or output's dtype violates the spec */
  KILN_ERROR_DEVICE = 10,          /* a tensor on a device the model does not run on */
  KILN_ERROR_INDEX = 11,           /* an index input out of range (eager raises IndexError) */
  KILN_ERROR_DRIVER = 12 /* no usable CUDA driver, device or cuBLASLt; a failed CUDA call */
} kiln_status;

/* DLPack device types kiln runs on (DLDevice.device_type). */
#define KILN_DEVICE_CPU 1  /* kDLCPU */
#define KILN_DEVICE_CUDA 2 /* kDLCUDA */

/* DLPack's DLDevice, DLDataType and DLTensor, field for field. */
typedef struct kiln_device {
  int32_t device_type; /* KILN_DEVICE_CPU or KILN_DEVICE_CUDA */
  int32_t device_id;
} kiln_device;
typedef struct kiln_dtype {
  uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
  uint8_t bits;
  uint16_t lanes; /* 1 */
} kiln_dtype;
typedef struct kiln_tensor {
  void *data;
  kiln_device device;
  int32_t ndim;
  kiln_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL: contiguous (only contiguous is accepted) */
  uint64_t byte_offset;
} kiln_tensor;

typedef struct kiln_model kiln_model;

/* What the last failed call on this thread said ("" when none failed). */
KILN_API const char *kiln_last_error(void);
/* "KILN_ERROR_SHAPE", ... */
KILN_API const char *kiln_status_name(kiln_status status);

/* Maps and validates the artifact at `path` and loads its code for
 * `device`: "cpu" (NULL too) runs the build for the exporting machine's CPU,
 * or the artifact's baseline build (x86-64 without AVX) where this CPU lacks
 * one of its features; "cpu-baseline" always runs the baseline build;
 * "cuda" or "cuda:N" loads the CUDA build (kiln.export target "cuda:...":
 * the cubin for the GPU's arch, else the PTX) on GPU N through the driver
 * (libcuda.so.1, opened with dlopen: without one the load is
 * KILN_ERROR_DRIVER) and copies the weights to the GPU. A CUDA model takes
 * tensors on its GPU (used in place) or on the host (copied there and
 * back); its runs are serialized and wait for the GPU before returning. */
KILN_API kiln_status kiln_model_load(const char *path, const char *device, kiln_model **model);
KILN_API void kiln_model_free(kiln_model *model);

/* The artifact's Meta section: "key: value" lines (toolchain identities,
 * CPU features, output-structure); valid while the model is loaded. */
KILN_API const char *kiln_model_meta(const kiln_model *model);

KILN_API size_t kiln_model_num_inputs(const kiln_model *model);
KILN_API size_t kiln_model_num_outputs(const kiln_model *model);
/* Input or output `index`: its name, dtype, rank and dims (-1 for a
 * symbolic dim; `dims` stays valid while the model is loaded). */
KILN_API kiln_status kiln_model_input_info(const kiln_model *model, size_t index, const char **name,
                                           kiln_dtype *dtype, int32_t *ndim, const int64_t **dims);
KILN_API kiln_status kiln_model_output_info(const kiln_model *model, size_t index,
                                            const char **name, kiln_dtype *dtype, int32_t *ndim,
                                            const int64_t **dims);
/* A symbolic dim's name and range: dims of inputs equal to -1 refer to
 * symbols in order of first appearance. */
KILN_API kiln_status kiln_model_symbol_info(const kiln_model *model, size_t index,
                                            const char **name, int64_t *min, int64_t *max);
KILN_API size_t kiln_model_num_symbols(const kiln_model *model);

/* The shape output `index` has for these inputs (checked as kiln_model_run
 * checks them); `shape` has room for the output's rank. */
KILN_API kiln_status kiln_model_output_shape(const kiln_model *model, const kiln_tensor *inputs,
                                             size_t num_inputs, size_t index, int64_t *shape);

/* Runs the model: `inputs` in order, `outputs` preallocated by the caller
 * with the shapes kiln_model_output_shape gives (contiguous, right dtype).
 * Thread-safe. */
KILN_API kiln_status kiln_model_run(const kiln_model *model, const kiln_tensor *inputs,
                                    size_t num_inputs, kiln_tensor *outputs, size_t num_outputs);

/* The CUDA driver and cuBLASLt libraries (paths or sonames; NULL or "":
 * libcuda.so.1, libcublasLt.so.13/.12/.11) CUDA models open; effective
 * before the first CUDA load only. */
KILN_API void kiln_set_cuda_libraries(const char *driver, const char *cublaslt);

/* kiln_model_run for a CUDA model on `stream` (a CUstream; NULL: the
 * legacy default stream), returning without waiting when every tensor is on
 * the GPU: the outputs are ready when the stream gets there (torch: pass
 * torch.cuda.current_stream().cuda_stream). Host tensors, and a model that
 * checks index inputs, make it wait as kiln_model_run does. Each stream
 * gets its own scratch memory (allocated on its first run). For a CPU
 * model it is kiln_model_run. */
KILN_API kiln_status kiln_model_run_async(const kiln_model *model, const kiln_tensor *inputs,
                                          size_t num_inputs, kiln_tensor *outputs,
                                          size_t num_outputs, void *stream);

/* Threads of the BLAS calls and parallel loops of every model (<= 0: the
 * libraries' defaults). */
KILN_API void kiln_set_num_threads(int threads);
/* GEMMs of every model call oneMKL's libmkl_rt at `path` ("" or "openblas":
 * the linked OpenBLAS, the default); nonzero when that library was taken. */
KILN_API int kiln_set_blas_library(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_H */
