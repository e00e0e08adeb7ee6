// SPDX-License-Identifier: Apache-2.0
// A fake cuBLASLt for testing kiln's GEMM call plans without a GPU: the
// entry points runtime/cuda/Cublaslt.cpp resolves. Descriptors keep what
// kiln sets; cublasLtMatmul computes D = epilogue(op(A) x op(B)) exactly as
// cuBLASLt defines it (column-major, leading dimensions, strided batches,
// bias per row of D, ReLU, tanh GELU) on host memory, in double, with
// f32/f16/bf16 storage, and appends one line per call to
// $KILN_FAKE_CUDA_LOG:
//   gemm compute=<c> op=<N|T><N|T> epilogue=<e> batch=<b> m=<rows of D> n=<cols of D> k=<k>
// So a wrong lowering (layout, transpose, stride, bias) gives wrong numbers
// in test/python/test_cuda_plan.py. Calls on a capturing stream are
// recorded as graph nodes (fake_cuda.h).
#include "fake_cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int type;
  uint64_t rows, cols;
  int64_t ld, stride;
  int32_t batch;
} Layout;
typedef struct {
  int compute, scale;
  int32_t transa, transb;
  uint32_t epilogue;
  const void *bias;
} Desc;

int cublasLtCreate(void **h) {
  static int token;
  *h = &token;
  return 0;
}
const char *cublasLtGetStatusName(int s) {
  return s == 7 ? "CUBLAS_STATUS_INVALID_VALUE" : s ? "CUBLAS_STATUS_UNKNOWN" : "OK";
}
int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
  Desc *x = calloc(1, sizeof(Desc));
  x->compute = compute, x->scale = scale, x->epilogue = 1;
  *d = x;
  return 0;
}
int cublasLtMatmulDescDestroy(void *d) {
  free(d);
  return 0;
}
int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t size) {
  Desc *x = d;
  if (attr == 3 && size == 4)
    memcpy(&x->transa, buf, 4);
  else if (attr == 4 && size == 4)
    memcpy(&x->transb, buf, 4);
  else if (attr == 7 && size == 4)
    memcpy(&x->epilogue, buf, 4);
  else if (attr == 8 && size == sizeof(void *))
    memcpy(&x->bias, buf, sizeof(void *));
  else
    return 7; // CUBLAS_STATUS_INVALID_VALUE: an attribute or size kiln should not set
  return 0;
}
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  Layout *x = calloc(1, sizeof(Layout));
  x->type = type, x->rows = rows, x->cols = cols, x->ld = ld, x->batch = 1;
  if (ld < (int64_t)rows) {
    free(x);
    return 7;
  }
  *l = x;
  return 0;
}
int cublasLtMatrixLayoutDestroy(void *l) {
  free(l);
  return 0;
}
int cublasLtMatrixLayoutSetAttribute(void *l, int attr, const void *buf, size_t size) {
  Layout *x = l;
  if (attr == 5 && size == 4)
    memcpy(&x->batch, buf, 4);
  else if (attr == 6 && size == 8)
    memcpy(&x->stride, buf, 8);
  else
    return 7;
  return 0;
}
int cublasLtMatmulPreferenceCreate(void **p) {
  *p = calloc(1, 8);
  return 0;
}
int cublasLtMatmulPreferenceDestroy(void *p) {
  free(p);
  return 0;
}
int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t size) {
  (void)p, (void)buf;
  // MAX_WORKSPACE_BYTES (uint64), MIN_ALIGNMENT_{A,B,C,D}_BYTES (uint32).
  return (attr == 1 && size == 8) || (attr >= 5 && attr <= 8 && size == 4) ? 0 : 7;
}
int cublasLtMatmulAlgoGetHeuristic(void *h, void *op, void *a, void *b, void *c, void *d,
                                   void *pref, int requested, void *results, int *returned) {
  (void)h, (void)op, (void)a, (void)b, (void)c, (void)d, (void)pref;
  if (requested < 1)
    return 7;
  memset(results, 0, 96); // one cublasLtMatmulHeuristicResult_t: algo 0, workspace 0
  *returned = 1;
  return 0;
}

/// A float8 e4m3fn byte's value (NaN: S.1111.111).
static double e4m3(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  double v = e == 15 && m == 7 ? NAN : e == 0 ? ldexp(m / 8.0, -6) : ldexp(1 + m / 8.0, e - 7);
  return b & 0x80 ? -v : v;
}

static double load(int type, const void *base, int64_t i) {
  if (type == 28) // CUDA_R_8F_E4M3
    return e4m3(((const uint8_t *)base)[i]);
  if (type == 3) // CUDA_R_8I
    return ((const int8_t *)base)[i];
  if (type == 10) // CUDA_R_32I
    return ((const int32_t *)base)[i];
  if (type == 0)
    return ((const float *)base)[i];
  if (type == 1)
    return ((const double *)base)[i];
  uint16_t bits = ((const uint16_t *)base)[i];
  if (type == 2) {
    _Float16 h;
    memcpy(&h, &bits, 2);
    return (double)h;
  }
  uint32_t u = (uint32_t)bits << 16; // bf16
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static void store(int type, void *base, int64_t i, double v) {
  if (type == 10) {
    ((int32_t *)base)[i] = (int32_t)v; // exact: int8 products summed in a double
  } else if (type == 0) {
    ((float *)base)[i] = (float)v;
  } else if (type == 1) {
    ((double *)base)[i] = v;
  } else if (type == 2) {
    _Float16 h = (_Float16)(float)v;
    memcpy((uint16_t *)base + i, &h, 2);
  } else {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u); // round to nearest even (finite values)
    ((uint16_t *)base)[i] = (uint16_t)(u >> 16);
  }
}

typedef struct {
  Desc op;
  Layout a, b, d;
  const void *A, *B;
  void *D;
} GemmNode;

static double element(const Layout *l, const void *base, int32_t t, int64_t bat, uint64_t i,
                      uint64_t j) {
  // op(X)[i, j]: X is column-major (rows x cols, ld), transposed when t.
  int64_t r = t ? (int64_t)j : (int64_t)i, c = t ? (int64_t)i : (int64_t)j;
  return load(l->type, base, bat * l->stride + r + c * l->ld);
}

static void run_gemm(void *payload) {
  GemmNode *g = payload;
  uint64_t m = g->d.rows, n = g->d.cols, k = g->op.transa ? g->a.rows : g->a.cols;
  for (int32_t bat = 0; bat < g->d.batch; ++bat)
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (uint64_t l = 0; l < k; ++l)
          acc += element(&g->a, g->A, g->op.transa, bat, i, l) *
                 element(&g->b, g->B, g->op.transb, bat, l, j);
        if (g->op.epilogue & 4)
          acc += load(g->d.type, g->op.bias, (int64_t)i);
        if (g->op.epilogue & 2)
          acc = acc > 0 ? acc : 0;
        if (g->op.epilogue & 32)
          acc = 0.5 * acc * (1 + tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
        store(g->d.type, g->D, bat * g->d.stride + (int64_t)i + (int64_t)j * g->d.ld, acc);
      }
}

int cublasLtMatmul(void *h, void *op, const void *alpha, const void *A, void *la, const void *B,
                   void *lb, const void *beta, const void *C, void *lc, void *D, void *ld,
                   const void *algo, void *ws, size_t wsBytes, void *stream) {
  (void)h, (void)alpha, (void)beta, (void)C, (void)lc, (void)algo, (void)ws, (void)wsBytes;
  GemmNode g = {*(Desc *)op, *(Layout *)la, *(Layout *)lb, *(Layout *)ld, A, B, D};
  uint64_t k = g.op.transa ? g.a.rows : g.a.cols;
  uint64_t kb = g.op.transb ? g.b.cols : g.b.rows;
  uint64_t m = g.op.transa ? g.a.cols : g.a.rows, n = g.op.transb ? g.b.rows : g.b.cols;
  if (k != kb || m != g.d.rows || n != g.d.cols || g.a.batch != g.d.batch || g.b.batch != g.d.batch)
    return 7; // shapes do not chain
  // int8 GEMMs as cuBLASLt takes them: int32 compute and scale, int32 D,
  // "TN" (A transposed, B not), leading dims multiples of 4.
  if ((g.a.type == 3 || g.b.type == 3) &&
      (g.a.type != 3 || g.b.type != 3 || g.d.type != 10 || g.op.compute != 72 || g.op.scale != 10 ||
       !g.op.transa || g.op.transb || g.a.ld % 4 || g.b.ld % 4 || g.op.epilogue != 1))
    return 15; // CUBLAS_STATUS_NOT_SUPPORTED
  // fp8: f32 compute, scale and D, "TN", leading dims multiples of 16.
  if ((g.a.type == 28 || g.b.type == 28) &&
      (g.a.type != 28 || g.b.type != 28 || g.d.type != 0 || g.op.compute != 68 || g.op.scale != 0 ||
       !g.op.transa || g.op.transb || g.a.ld % 16 || g.b.ld % 16 || g.op.epilogue != 1))
    return 15;
  const char *path = getenv("KILN_FAKE_CUDA_LOG");
  FILE *out = path ? fopen(path, "a") : NULL;
  if (out) {
    fprintf(out, "gemm compute=%d op=%c%c epilogue=%u batch=%d m=%llu n=%llu k=%llu\n",
            g.op.compute, g.op.transa ? 'T' : 'N', g.op.transb ? 'T' : 'N', g.op.epilogue,
            g.d.batch, (unsigned long long)m, (unsigned long long)n, (unsigned long long)k);
    fclose(out);
  }
  fake_submit(stream, run_gemm, &g, sizeof g);
  return 0;
}
