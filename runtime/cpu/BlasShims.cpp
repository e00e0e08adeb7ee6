//===- BlasShims.cpp - OpenBLAS behind kiln's memref calling convention ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the `_mlir_ciface_kiln_blas_*` functions the JIT'd code calls:
// unpacks strided memref descriptors into row-major leading dimensions and
// calls `cblas_?gemm` (batched calls loop over dim 0); bf16 x bf16 -> f32
// products (CPU autocast's GEMMs) call oneMKL's cblas_gemm_bf16bf16f32, or
// sgemm on widened copies under OpenBLAS (which has no bf16 GEMM here).
// Layouts BLAS cannot take (a non-unit innermost stride) use a plain loop. The BLAS thread count
// follows kilnSetNumThreads, applied lazily before a call.
//
// The provider is OpenBLAS (linked) unless kilnSetBlasLibrary (the frontend
// calls it at import with $KILN_BLAS_LIBRARY or the venv's MKL, kiln/_blas.py)
// names oneMKL's libmkl_rt: it is dlopen'ed RTLD_LOCAL and its cblas_?gemm called instead,
// for every shape (OpenBLAS runs SSE3 kernels on CPUs it does not know).
// MKL gets the GNU threading layer (torch's libgomp, as eager's MKL uses) and
// dynamic threading off, like torch; SEQUENTIAL when no libgomp can load.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/BlasShims.h"
#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/Threads.h"

#include <cblas.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

/// A dlopen'ed CBLAS (oneMKL's libmkl_rt; LP64, standard CBLAS enums).
struct DynamicBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
  using Dgemm = void (*)(int, int, int, int, int, int, double, const double *, int, const double *,
                         int, double, double *, int);
  /// cblas_gemm_bf16bf16f32: bf16 A and B (raw uint16), f32 C.
  using GemmBf16 = void (*)(int, int, int, int, int, int, float, const uint16_t *, int,
                            const uint16_t *, int, float, float *, int);
  Sgemm sgemm;
  Dgemm dgemm;
  GemmBf16 gemmBf16; ///< null when this MKL lacks it
  void (*setNumThreads)(int);
  std::string description;
};

/// The dlopen'ed provider in use; null means OpenBLAS.
std::atomic<const DynamicBlas *> dynamicBlas{nullptr};
/// Set once a provider was chosen (explicitly or from the environment).
std::mutex providerMutex;

std::atomic<int> requestedThreads{0};
std::atomic<int> appliedThreads{0};

/// Loads oneMKL from `path` (libmkl_rt.so.N); null (and a reason in `why`)
/// when it is not there or lacks what kiln calls. Never unloaded.
const DynamicBlas *loadMkl(const std::string &path, std::string &why) {
  std::string dir = path.substr(0, path.rfind('/') + 1);
  std::string soVersion = path.substr(path.rfind(".so") + 3); // ".2", "" ...
  // libmkl_rt loads its core and threading layer from its own folder and
  // exits the process if one is missing, so check them first.
  auto present = [&](const char *stem) {
    std::string p = dir + stem + ".so" + soVersion;
    return access(p.c_str(), R_OK) == 0;
  };
  if (!present("libmkl_core") || !present("libmkl_sequential")) {
    why = "libmkl_core/libmkl_sequential missing next to " + path;
    return nullptr;
  }
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    why = e ? e : "dlopen failed";
    return nullptr;
  }
  auto sym = [&](const char *name) { return dlsym(h, name); };
  auto *setLayer = reinterpret_cast<int (*)(int)>(sym("MKL_Set_Threading_Layer"));
  auto *setInterface = reinterpret_cast<int (*)(int)>(sym("MKL_Set_Interface_Layer"));
  auto *setDynamic = reinterpret_cast<void (*)(int)>(sym("MKL_Set_Dynamic"));
  auto blas = std::make_unique<DynamicBlas>();
  blas->sgemm = reinterpret_cast<DynamicBlas::Sgemm>(sym("cblas_sgemm"));
  blas->dgemm = reinterpret_cast<DynamicBlas::Dgemm>(sym("cblas_dgemm"));
  blas->gemmBf16 = reinterpret_cast<DynamicBlas::GemmBf16>(sym("cblas_gemm_bf16bf16f32"));
  blas->setNumThreads = reinterpret_cast<void (*)(int)>(sym("MKL_Set_Num_Threads"));
  if (!blas->sgemm || !blas->dgemm || !blas->setNumThreads || !setLayer || !setInterface ||
      !setDynamic) {
    why = path + " lacks cblas_?gemm or the MKL service functions";
    return nullptr; // handle kept: harmless
  }
  // Threading layer: GNU OpenMP like eager's MKL, on the libgomp torch
  // already loaded (made global: libmkl_gnu_thread finds GOMP_* there) or
  // else the system's; sequential when libgomp or the GNU layer is missing.
  constexpr int kLp64 = 0, kSequential = 1, kGnu = 3;
  bool gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) ||
              dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
  bool gnu = gomp && present("libmkl_gnu_thread");
  setInterface(kLp64);
  setLayer(gnu ? kGnu : kSequential);
  setDynamic(0);
  blas->description = std::string("mkl (") + (gnu ? "gnu" : "sequential") + " threading) " + path;
  return blas.release();
}

/// The dlopen'ed BLAS kilnSetBlasLibrary chose; null means OpenBLAS (also
/// when it was never called).
const DynamicBlas *provider() { return dynamicBlas.load(std::memory_order_acquire); }

void applyThreads() {
  const DynamicBlas *p = provider();
  int want = requestedThreads.load(std::memory_order_relaxed);
  if (want > 0 && appliedThreads.load(std::memory_order_relaxed) != want) {
    // With MKL loaded, OpenBLAS keeps the small GEMMs on the calling thread:
    // its worker pool spinning next to MKL's (torch's libgomp) team
    // oversubscribes the cores.
    openblas_set_num_threads(p ? 1 : want);
    if (p)
      p->setNumThreads(want);
    appliedThreads.store(want, std::memory_order_relaxed);
  }
}

/// A row-major view of one matrix: base pointer, rows, cols, row stride,
/// col stride.
template <typename T> struct Matrix {
  T *data;
  int64_t rows, cols, rowStride, colStride;
  /// BLAS needs unit column stride (irrelevant when there is one column).
  bool blasCompatible() const { return colStride == 1 || cols <= 1; }
  /// The leading dimension BLAS wants (>= max(1, cols)).
  int64_t ld() const { return std::max<int64_t>({rowStride, cols, 1}); }
  T &at(int64_t r, int64_t c) const { return data[r * rowStride + c * colStride]; }
};

template <typename T, int N> Matrix<T> matrix(kiln::rt::StridedMemRef<T, N> *m, int64_t batch) {
  return {m->data + m->offset + (N == 3 ? batch * m->strides[0] : 0), m->sizes[N - 2],
          m->sizes[N - 1], m->strides[N - 2], m->strides[N - 1]};
}

CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

/// The loaded MKL for every shape, OpenBLAS only without it: OpenBLAS
/// 0.3.21 picks its SSE3 "Prescott" kernels on CPUs it does not recognize
/// (this VM's "Intel Xeon Processor" with AVX-512), where MKL is 1.1-5x
/// faster from 8x64x64 up (1x256x512 with B transposed 17.5 vs 68.6 us;
/// 1x1000x2048, a classifier's FC layer, 341 vs 1269 us) and within 0.5 us
/// below (docs/performance.md, "Small GEMMs on MKL").
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
          const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (const DynamicBlas *p = provider())
    return p->sgemm(CblasRowMajor, trans(transA), trans(transB), m, n, k, 1.0f, a, lda, b, ldb,
                    beta, c, ldc);
  cblas_sgemm(CblasRowMajor, trans(transA), trans(transB), m, n, k, 1.0f, a, lda, b, ldb, beta, c,
              ldc);
}
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
          const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  if (const DynamicBlas *p = provider())
    return p->dgemm(CblasRowMajor, trans(transA), trans(transB), m, n, k, 1.0, a, lda, b, ldb, beta,
                    c, ldc);
  cblas_dgemm(CblasRowMajor, trans(transA), trans(transB), m, n, k, 1.0, a, lda, b, ldb, beta, c,
              ldc);
}

/// C = A * op(B) + beta * C on one matrix.
template <typename T> void matmul(Matrix<T> a, Matrix<T> b, Matrix<T> c, bool transB, T beta) {
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0)
    return;
  if (k > 0 && b.blasCompatible() && c.blasCompatible()) {
    if (a.blasCompatible())
      return gemm(false, transB, m, n, k, a.data, a.ld(), b.data, b.ld(), beta, c.data, c.ld());
    // A transposed view (unit row stride, kiln-cpu-linalg-to-blas's
    // transposed left operand): the stored K x M matrix, passed as transA.
    if (a.rowStride == 1 && a.colStride >= std::max<int64_t>(m, 1))
      return gemm(true, transB, m, n, k, a.data, a.colStride, b.data, b.ld(), beta, c.data, c.ld());
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += a.at(i, p) * (transB ? b.at(j, p) : b.at(p, j));
      c.at(i, j) = (beta == T(0) ? T(0) : beta * c.at(i, j)) + acc;
    }
}

/// The float value of bf16 bits `h`.
float widen(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// `m` widened to a dense row-major float copy in `buffer`.
Matrix<float> widened(Matrix<uint16_t> m, std::vector<float> &buffer) {
  buffer.resize(std::max<int64_t>(m.rows * m.cols, 1));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c)
      buffer[r * m.cols + c] = widen(m.at(r, c));
  return {buffer.data(), m.rows, m.cols, m.cols, 1};
}

/// C (f32) = A * op(B) + beta * C with bf16 A and B: oneMKL's
/// cblas_gemm_bf16bf16f32 (f32 accumulation, AMX/AVX512-BF16 kernels) when
/// loaded; else both widened to f32 and multiplied by sgemm (the same
/// products: bf16 values are exact in f32).
void matmulBf16(Matrix<uint16_t> a, Matrix<uint16_t> b, Matrix<float> c, bool transB, float beta) {
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0)
    return;
  const DynamicBlas *p = provider();
  if (p && p->gemmBf16 && k > 0 && a.blasCompatible() && b.blasCompatible() && c.blasCompatible()) {
    p->gemmBf16(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a.data, a.ld(), b.data, b.ld(), beta, c.data, c.ld());
    return;
  }
  thread_local std::vector<float> fa, fb;
  matmul(widened(a, fa), widened(b, fb), c, transB, beta);
}

template <typename T>
void batched(kiln::rt::StridedMemRef<T, 3> *a, kiln::rt::StridedMemRef<T, 3> *b,
             kiln::rt::StridedMemRef<T, 3> *c, int32_t transB, T beta) {
  applyThreads();
  for (int64_t i = 0; i < c->sizes[0]; ++i)
    matmul(matrix(a, i), matrix(b, i), matrix(c, i), transB != 0, beta);
}

} // namespace

extern "C" {

void kilnSetNumThreads(int n) { requestedThreads.store(n, std::memory_order_relaxed); }

int kilnGetNumThreads() { return requestedThreads.load(std::memory_order_relaxed); }

int kilnSetBlasLibrary(const char *path) {
  std::lock_guard<std::mutex> lock(providerMutex);
  static std::string lastError;
  const DynamicBlas *blas = nullptr;
  if (path && *path && std::string(path) != "openblas") {
    blas = loadMkl(path, lastError);
    if (!blas)
      std::fprintf(stderr, "kiln: cannot use BLAS library %s (%s); using OpenBLAS\n", path,
                   lastError.c_str());
  }
  dynamicBlas.store(blas, std::memory_order_release);
  appliedThreads.store(0, std::memory_order_relaxed); // re-apply to the new one
  return blas != nullptr;
}

const char *kilnBlasLibrary() {
  const DynamicBlas *p = provider();
  return p ? p->description.c_str() : "openblas";
}

void _mlir_ciface_kiln_blas_sgemm(kiln::rt::StridedMemRef<float, 2> *a,
                                  kiln::rt::StridedMemRef<float, 2> *b,
                                  kiln::rt::StridedMemRef<float, 2> *c, int32_t transB,
                                  float beta) {
  applyThreads();
  Matrix<float> am = matrix(a, 0), bm = matrix(b, 0), cm = matrix(c, 0);
  // A stamped weight (kiln.config.freeze_weights) packed once: PackedGemm.h.
  if (am.cols > 0 && am.blasCompatible() && bm.blasCompatible() && cm.blasCompatible() &&
      kiln::rt::packedSgemm(b->data, transB != 0, cm.rows, cm.cols, am.cols, am.data, am.ld(),
                            bm.data, bm.ld(), beta, cm.data, cm.ld()))
    return;
  matmul(am, bm, cm, transB != 0, beta);
}

void _mlir_ciface_kiln_blas_dgemm(kiln::rt::StridedMemRef<double, 2> *a,
                                  kiln::rt::StridedMemRef<double, 2> *b,
                                  kiln::rt::StridedMemRef<double, 2> *c, int32_t transB,
                                  double beta) {
  applyThreads();
  matmul(matrix(a, 0), matrix(b, 0), matrix(c, 0), transB != 0, beta);
}

void _mlir_ciface_kiln_blas_sgemm_batched(kiln::rt::StridedMemRef<float, 3> *a,
                                          kiln::rt::StridedMemRef<float, 3> *b,
                                          kiln::rt::StridedMemRef<float, 3> *c, int32_t transB,
                                          float beta) {
  batched(a, b, c, transB, beta);
}

void _mlir_ciface_kiln_blas_dgemm_batched(kiln::rt::StridedMemRef<double, 3> *a,
                                          kiln::rt::StridedMemRef<double, 3> *b,
                                          kiln::rt::StridedMemRef<double, 3> *c, int32_t transB,
                                          double beta) {
  batched(a, b, c, transB, beta);
}

void _mlir_ciface_kiln_blas_bf16gemm(kiln::rt::StridedMemRef<uint16_t, 2> *a,
                                     kiln::rt::StridedMemRef<uint16_t, 2> *b,
                                     kiln::rt::StridedMemRef<float, 2> *c, int32_t transB,
                                     float beta) {
  applyThreads();
  matmulBf16(matrix(a, 0), matrix(b, 0), matrix(c, 0), transB != 0, beta);
}

void _mlir_ciface_kiln_blas_bf16gemm_batched(kiln::rt::StridedMemRef<uint16_t, 3> *a,
                                             kiln::rt::StridedMemRef<uint16_t, 3> *b,
                                             kiln::rt::StridedMemRef<float, 3> *c, int32_t transB,
                                             float beta) {
  applyThreads();
  for (int64_t i = 0; i < c->sizes[0]; ++i)
    matmulBf16(matrix(a, i), matrix(b, i), matrix(c, i), transB != 0, beta);
}

} // extern "C"

namespace kiln::rt {

std::vector<std::pair<const char *, void *>> blasShimSymbols() {
  return {
      {"_mlir_ciface_kiln_blas_sgemm", reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_sgemm)},
      {"_mlir_ciface_kiln_blas_dgemm", reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_dgemm)},
      {"_mlir_ciface_kiln_blas_sgemm_batched",
       reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_sgemm_batched)},
      {"_mlir_ciface_kiln_blas_dgemm_batched",
       reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_dgemm_batched)},
      {"_mlir_ciface_kiln_blas_bf16gemm",
       reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_bf16gemm)},
      {"_mlir_ciface_kiln_blas_bf16gemm_batched",
       reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_bf16gemm_batched)},
  };
}

} // namespace kiln::rt
