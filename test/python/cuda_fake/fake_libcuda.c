// SPDX-License-Identifier: Apache-2.0
// A fake CUDA driver for testing kiln's CUDA runtime without a GPU: the
// entry points libkiln_cuda resolves, with one device (sm_90, 132 SMs).
// cuModuleGetFunction succeeds only if the kernel's name occurs in the
// loaded image (a real cubin holds its kernels' names); every launch is
// appended to $KILN_FAKE_CUDA_LOG as one line:
//   launch <name> grid=<x,y,z> block=<x,y,z> stream=<ptr> args=<p0,p1,...>
// $KILN_FAKE_CUDA_FAIL=init makes cuInit fail (CUDA_ERROR_NO_DEVICE).
//
// Host emulation: with $KILN_FAKE_CUDA_HOST_LIB set (a library of
// `run_<kernel>(void **ptrs, unsigned grid, unsigned block)` launchers
// built by test/python/cuda_host.py from the module's source), a loaded
// module's kernels run on the CPU: "device pointers" are host addresses
// (CPU tensors). Stream capture records launches, copies and (through
// fake_cublaslt.c) GEMMs as graph nodes; cuGraphLaunch runs them in order.
#include "fake_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct {
  char *image;
  size_t size;
  void *host; // dlopen'ed $KILN_FAKE_CUDA_HOST_LIB, or NULL
} FakeModule;
typedef struct {
  char name[256];
  HostKernel run; // run_<name> of the host library, or NULL (log only)
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
  const char *host = getenv("KILN_FAKE_CUDA_HOST_LIB");
  if (host && *host) {
    m->host = dlopen(host, RTLD_NOW | RTLD_LOCAL);
    if (!m->host)
      return 200; // CUDA_ERROR_INVALID_IMAGE
  }
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
      if (m->host) {
        char sym[300];
        snprintf(sym, sizeof sym, "run_%s", name);
        f->run = (HostKernel)dlsym(m->host, sym);
        if (!f->run)
          return 500;
      }
      *fn = f;
      return 0;
    }
  return 500; // CUDA_ERROR_NOT_FOUND
}
typedef struct {
  FakeFunction *fn;
  unsigned grid[3], block[3];
  void *stream;
  int n;
  void *args[64];
} KernelNode;

static void run_kernel(void *payload) {
  KernelNode *k = payload;
  const char *path = getenv("KILN_FAKE_CUDA_LOG");
  FILE *out = path ? fopen(path, "a") : NULL;
  if (out) {
    fprintf(out, "launch %s grid=%u,%u,%u block=%u,%u,%u stream=%p args=", k->fn->name, k->grid[0],
            k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->stream);
    for (int i = 0; i < k->n; ++i)
      fprintf(out, i ? ",%p" : "%p", k->args[i]);
    fprintf(out, "\n");
    fclose(out);
  }
  if (k->fn->run)
    k->fn->run(k->args, k->grid[0], k->block[0]);
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  (void)shared;
  (void)extra;
  if (current_ctx != &ctx_token)
    return 201; // CUDA_ERROR_INVALID_CONTEXT
  KernelNode k = {fn, {gx, gy, gz}, {bx, by, bz}, stream, 0, {0}};
  // kiln's runtime NULL-terminates `params` (pointer arguments only).
  for (; params && params[k.n] && k.n < 64; ++k.n)
    k.args[k.n] = *(void **)params[k.n];
  fake_submit(stream, run_kernel, &k, sizeof k);
  return 0;
}

typedef struct {
  void *dst, *src;
  size_t bytes;
} CopyNode;

static void run_copy(void *payload) {
  CopyNode *c = payload;
  memcpy(c->dst, c->src, c->bytes);
}

CUresult cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t bytes,
                              void *stream) {
  CopyNode c = {(void *)dst, (void *)src, bytes};
  fake_submit(stream, run_copy, &c, sizeof c);
  return 0;
}

// Device memory (runtime/cuda/DeviceMemory.cpp, used by libkiln_runtime's
// CUDA artifacts): host memory, copies are memcpy.
CUresult cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
  void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  *ptr = (unsigned long long)p;
  return p ? 0 : 2; // CUDA_ERROR_OUT_OF_MEMORY
}
CUresult cuMemFree_v2(unsigned long long ptr) {
  free((void *)ptr);
  return 0;
}
CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t bytes) {
  memcpy((void *)dst, src, bytes);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes) {
  memcpy(dst, (const void *)src, bytes);
  return 0;
}

// Streams and graphs: a stream is a heap token; a capturing stream
// appends nodes to its graph instead of running them.
typedef struct Node {
  FakeNodeFn fn;
  struct Node *next;
  size_t size;
  char payload[];
} Node;
typedef struct {
  Node *first, *last;
} FakeGraph;
typedef struct {
  int capturing;
  FakeGraph *graph;
} FakeStream;
static FakeStream *capture_streams[16];

void fake_submit(void *stream, FakeNodeFn fn, const void *payload, size_t size) {
  for (int i = 0; i < 16; ++i) {
    FakeStream *s = capture_streams[i];
    if (s && (void *)s == stream && s->capturing) {
      Node *n = malloc(sizeof(Node) + size);
      n->fn = fn;
      n->next = NULL;
      n->size = size;
      memcpy(n->payload, payload, size);
      if (s->graph->last)
        s->graph->last->next = n;
      else
        s->graph->first = n;
      s->graph->last = n;
      return;
    }
  }
  char copy[1024];
  memcpy(copy, payload, size < sizeof copy ? size : sizeof copy);
  fn(copy);
}

CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  FakeStream *s = calloc(1, sizeof(FakeStream));
  for (int i = 0; i < 16; ++i)
    if (!capture_streams[i]) {
      capture_streams[i] = s;
      *stream = s;
      return 0;
    }
  free(s);
  return 2; // CUDA_ERROR_OUT_OF_MEMORY
}
CUresult cuStreamDestroy_v2(void *stream) {
  for (int i = 0; i < 16; ++i)
    if (capture_streams[i] == stream) {
      capture_streams[i] = NULL;
      free(stream);
      return 0;
    }
  return 400; // CUDA_ERROR_INVALID_HANDLE
}
CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  (void)mode;
  FakeStream *s = stream;
  if (!s)       // the legacy default stream cannot be captured
    return 900; // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
  s->capturing = 1;
  s->graph = calloc(1, sizeof(FakeGraph));
  return 0;
}
CUresult cuStreamEndCapture(void *stream, void **graph) {
  FakeStream *s = stream;
  s->capturing = 0;
  *graph = s->graph;
  s->graph = NULL;
  return 0;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  (void)flags;
  *exec = graph; // the exec shares the graph's nodes
  return 0;
}
CUresult cuGraphLaunch(void *exec, void *stream) {
  (void)stream;
  const char *path = getenv("KILN_FAKE_CUDA_LOG");
  FILE *out = path ? fopen(path, "a") : NULL;
  if (out) {
    fprintf(out, "graph launch stream=%p\n", stream);
    fclose(out);
  }
  for (Node *n = ((FakeGraph *)exec)->first; n; n = n->next)
    n->fn(n->payload);
  return 0;
}
CUresult cuGraphExecDestroy(void *exec) {
  (void)exec;
  return 0;
}
CUresult cuGraphDestroy(void *graph) {
  FakeGraph *g = graph;
  for (Node *n = g->first; n;) {
    Node *next = n->next;
    free(n);
    n = next;
  }
  free(g);
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
