// SPDX-License-Identifier: Apache-2.0
// A fake CUDA driver for testing kiln's CUDA runtime without a GPU: the
// entry points libkiln_cuda resolves, with one device (sm_90, 132 SMs).
// cuModuleGetFunction succeeds only if the kernel's name occurs in the
// loaded image (a real cubin holds its kernels' names); every launch is
// appended to $KILN_FAKE_CUDA_LOG as one line:
//   launch <name> grid=<x,y,z> block=<x,y,z> stream=<ptr> args=<p0,p1,...>
// $KILN_FAKE_CUDA_FAIL=init makes cuInit fail (CUDA_ERROR_NO_DEVICE).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct {
  char *image;
  size_t size;
} FakeModule;
typedef struct {
  char name[256];
} FakeFunction;
static int ctx_token;
static void *current_ctx;

CUresult cuInit(unsigned flags) {
  (void)flags;
  const char *f = getenv("KILN_FAKE_CUDA_FAIL");
  return f && strcmp(f, "init") == 0 ? 100 : 0;
}
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal != 0)
    return 101;
  *d = 0;
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  *v = attr == 16 ? 132 : attr == 75 ? 9 : attr == 76 ? 0 : 0;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  *ctx = &ctx_token;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  return 0;
}
CUresult cuCtxGetCurrent(void **ctx) {
  *ctx = current_ctx;
  return 0;
}
CUresult cuCtxSetCurrent(void *ctx) {
  current_ctx = ctx;
  return 0;
}
CUresult cuModuleLoadData(void **mod, const void *image) {
  // Cubins contain NULs and the driver is not told the size: keep a
  // bounded prefix (1 MiB), enough for the symbol names of test modules.
  FakeModule *m = calloc(1, sizeof(FakeModule));
  m->size = 1 << 20;
  m->image = malloc(m->size);
  // Copy until a run of 64 NULs (the image's own size is not passed).
  const char *src = image;
  size_t zeros = 0, i = 0;
  for (; i < m->size && zeros < 64; ++i) {
    m->image[i] = src[i];
    zeros = src[i] ? 0 : zeros + 1;
  }
  m->size = i;
  *mod = m;
  return 0;
}
CUresult cuModuleUnload(void *mod) {
  FakeModule *m = mod;
  free(m->image);
  free(m);
  return 0;
}
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  FakeModule *m = mod;
  size_t n = strlen(name);
  for (size_t i = 0; i + n <= m->size; ++i)
    if (memcmp(m->image + i, name, n) == 0) {
      FakeFunction *f = calloc(1, sizeof(FakeFunction));
      strncpy(f->name, name, sizeof(f->name) - 1);
      *fn = f;
      return 0;
    }
  return 500; // CUDA_ERROR_NOT_FOUND
}
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  (void)shared;
  (void)extra;
  if (current_ctx != &ctx_token)
    return 201; // CUDA_ERROR_INVALID_CONTEXT
  FakeFunction *f = fn;
  const char *path = getenv("KILN_FAKE_CUDA_LOG");
  FILE *out = path ? fopen(path, "a") : NULL;
  if (!out)
    return 0;
  fprintf(out, "launch %s grid=%u,%u,%u block=%u,%u,%u stream=%p args=", f->name, gx, gy, gz, bx,
          by, bz, stream);
  // kiln's runtime NULL-terminates `params` (pointer arguments only).
  for (int i = 0; params && params[i]; ++i)
    fprintf(out, i ? ",%p" : "%p", *(void **)params[i]);
  fprintf(out, "\n");
  fclose(out);
  return 0;
}
CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  return 0;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == 100   ? "CUDA_ERROR_NO_DEVICE"
       : e == 500 ? "CUDA_ERROR_NOT_FOUND"
       : e == 201 ? "CUDA_ERROR_INVALID_CONTEXT"
                  : "CUDA_ERROR_UNKNOWN";
  return 0;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  *s = e == 100   ? "no CUDA-capable device is detected"
       : e == 500 ? "named symbol not found"
                  : "fake error";
  return 0;
}
