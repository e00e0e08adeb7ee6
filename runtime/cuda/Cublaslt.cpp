//===- Cublaslt.cpp - GEMMs through cuBLASLt (dlopen) ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Cublaslt.h: the row-major → column-major lowering, the
// library's loading (one attempt per process, like the driver) and the
// prepared matmul (descriptors, heuristic algorithm, one cublasLtMatmul
// per run). Enum values are cublasLt.h's / library_types.h's.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Cublaslt.h"

#include <initializer_list>
#include <mutex>

#include <dlfcn.h>

namespace kiln::rt::cuda {
namespace {

using Status = int; // cublasStatus_t, 0 = success

// cublasComputeType_t.
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70, kCompute32I = 72;
// cublasLtMatmulDescAttributes_t / cublasLtMatrixLayoutAttribute_t /
// cublasLtMatmulPreferenceAttributes_t.
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1, kPrefMinAlignA = 5; // A, B, C, D: 5..8
// cublasLtEpilogue_t.
constexpr uint32_t kEpiDefault = 1, kEpiRelu = 2, kEpiBias = 4, kEpiGelu = 32;

struct HeuristicResult { // cublasLtMatmulHeuristicResult_t
  uint64_t algo[8];
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

struct LtApi {
  Status (*create)(void **handle);
  Status (*descCreate)(void **desc, int computeType, int scaleType);
  Status (*descDestroy)(void *desc);
  Status (*descSet)(void *desc, int attr, const void *buf, size_t size);
  Status (*layoutCreate)(void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*layoutDestroy)(void *layout);
  Status (*layoutSet)(void *layout, int attr, const void *buf, size_t size);
  Status (*prefCreate)(void **pref);
  Status (*prefDestroy)(void *pref);
  Status (*prefSet)(void *pref, int attr, const void *buf, size_t size);
  Status (*heuristic)(void *handle, void *op, void *a, void *b, void *c, void *d, void *pref,
                      int requested, HeuristicResult *results, int *returned);
  Status (*matmul)(void *handle, void *op, const void *alpha, const void *a, void *la,
                   const void *b, void *lb, const void *beta, const void *c, void *lc, void *d,
                   void *ld, const void *algo, void *workspace, size_t workspaceBytes,
                   CUstream stream);
  const char *(*statusName)(Status s);
  void *handle = nullptr;
};

std::string &libraryOverride() {
  static std::string name;
  return name;
}

template <typename Fn> bool sym(void *lib, const char *name, Fn &slot, std::string &error) {
  slot = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!slot)
    error = std::string("cuBLASLt has no symbol ") + name;
  return slot != nullptr;
}

bool loadLt(LtApi &a, std::string &error) {
  void *lib = nullptr;
  std::string tried;
  const std::string &forced = libraryOverride();
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"}) {
    std::string n = forced.empty() ? name : forced;
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib || !forced.empty()) {
      if (!lib)
        tried = n + " (" + dlerror() + ")";
      break;
    }
    tried += (tried.empty() ? "" : ", ") + n;
  }
  if (!lib) {
    error = "cuBLASLt not found: " + tried + "; kiln's CUDA GEMMs need it";
    return false;
  }
  bool ok = sym(lib, "cublasLtCreate", a.create, error) &&
            sym(lib, "cublasLtMatmulDescCreate", a.descCreate, error) &&
            sym(lib, "cublasLtMatmulDescDestroy", a.descDestroy, error) &&
            sym(lib, "cublasLtMatmulDescSetAttribute", a.descSet, error) &&
            sym(lib, "cublasLtMatrixLayoutCreate", a.layoutCreate, error) &&
            sym(lib, "cublasLtMatrixLayoutDestroy", a.layoutDestroy, error) &&
            sym(lib, "cublasLtMatrixLayoutSetAttribute", a.layoutSet, error) &&
            sym(lib, "cublasLtMatmulPreferenceCreate", a.prefCreate, error) &&
            sym(lib, "cublasLtMatmulPreferenceDestroy", a.prefDestroy, error) &&
            sym(lib, "cublasLtMatmulPreferenceSetAttribute", a.prefSet, error) &&
            sym(lib, "cublasLtMatmulAlgoGetHeuristic", a.heuristic, error) &&
            sym(lib, "cublasLtMatmul", a.matmul, error) &&
            sym(lib, "cublasLtGetStatusName", a.statusName, error);
  if (!ok)
    return false;
  Status s = a.create(&a.handle);
  if (s != 0)
    error = "cublasLtCreate failed: " + std::string(a.statusName(s));
  return s == 0;
}

/// The process's cuBLASLt (loaded once; the failure is remembered).
const LtApi *lt(std::string &error) {
  static LtApi api{};
  static bool ok = false;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] { ok = loadLt(api, failure); });
  if (!ok)
    error = failure;
  return ok ? &api : nullptr;
}

bool check(const LtApi &a, Status s, const char *what, const LtCall &call, std::string &error) {
  if (s == 0)
    return true;
  error = std::string(what) + " failed: " + a.statusName(s) + " (" + describe(call) + ")";
  return false;
}

uint32_t epilogueCode(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return kEpiDefault;
  case Epilogue::Bias:
    return kEpiBias;
  case Epilogue::BiasRelu:
    return kEpiBias | kEpiRelu;
  case Epilogue::BiasGeluTanh:
    return kEpiBias | kEpiGelu;
  case Epilogue::Relu:
    return kEpiRelu;
  case Epilogue::GeluTanh:
    return kEpiGelu;
  }
  return kEpiDefault;
}

/// The largest power of two (up to 256) dividing every non-null pointer.
uint32_t alignmentOf(std::initializer_list<const void *> ptrs) {
  uint32_t align = 256;
  for (const void *p : ptrs)
    while (p && align > 1 && reinterpret_cast<uintptr_t>(p) % align != 0)
      align /= 2;
  return align;
}

} // namespace

void setCublasLtLibraryName(const std::string &name) { libraryOverride() = name; }

bool lowerGemm(const GemmDesc &g, LtCall &c, std::string &error) {
  bool sixteen = g.inType == kF16 || g.inType == kBF16;
  if (g.inType == kF64 && g.outType == kF64)
    c.computeType = kCompute64F, c.scaleType = kF64;
  else if (g.inType == kF32 && g.outType == kF32)
    c.computeType = g.tf32 ? kCompute32FFastTF32 : kCompute32F, c.scaleType = kF32;
  else if (sixteen && (g.outType == g.inType || g.outType == kF32))
    c.computeType = kCompute32F, c.scaleType = kF32;
  else if (g.inType == kI8 && g.outType == kI32 && g.transB && g.batch == 1 &&
           g.epilogue == Epilogue::None && g.k % 4 == 0 && g.n % 4 == 0)
    // int8: only the "TN" form (cuBLASLt's A = kiln's B transposed, its B
    // = kiln's A), int32 compute and scale, 4-aligned leading dims.
    c.computeType = kCompute32I, c.scaleType = kI32;
  else if (g.inType == kF8E4M3 && g.outType == kF32 && g.transB && g.batch == 1 &&
           g.epilogue == Epilogue::None && g.k % 16 == 0 && g.n % 16 == 0)
    // fp8 e4m3 (sm_89+): the same "TN" form, f32 accumulation and scale,
    // leading dims multiples of 16; unit A/B scales (kiln scales after).
    c.computeType = kCompute32F, c.scaleType = kF32;
  else if (g.inType == kF8E4M3) {
    error = "cuBLASLt: an fp8 GEMM must be x @ w^T into f32 without batch or epilogue, "
            "with K and N multiples of 16";
    return false;
  } else if (g.inType == kI8) {
    error = "cuBLASLt: an int8 GEMM must be x @ w^T into int32 without batch or epilogue, "
            "with K and N multiples of 4";
    return false;
  } else {
    error = "cuBLASLt: no GEMM for input type " + std::to_string(g.inType) + " and output type " +
            std::to_string(g.outType);
    return false;
  }
  // Column-major C^T (n x m, ld n) = B^T x A^T. kiln's B is [k, n]
  // row-major (col-major n x k, ld n) or [n, k] when transB (col-major
  // k x n, ld k, used transposed); kiln's A [m, k] is col-major k x m.
  c.transA = g.transB ? 1 : 0;
  c.transB = 0;
  c.a = {g.inType, g.transB ? (uint64_t)g.k : (uint64_t)g.n,
         g.transB ? (uint64_t)g.n : (uint64_t)g.k, g.transB ? g.k : g.n, g.n * g.k};
  c.b = {g.inType, (uint64_t)g.k, (uint64_t)g.m, g.k, g.m * g.k};
  c.d = {g.outType, (uint64_t)g.n, (uint64_t)g.m, g.n, g.m * g.n};
  c.batch = (int32_t)g.batch;
  c.epilogue = epilogueCode(g.epilogue);
  return true;
}

std::string describe(const LtCall &c) {
  auto lay = [](const LtLayout &l) {
    return "t" + std::to_string(l.type) + " " + std::to_string(l.rows) + "x" +
           std::to_string(l.cols) + " ld " + std::to_string(l.ld) + " stride " +
           std::to_string(l.batchStride);
  };
  return "cublasLt compute " + std::to_string(c.computeType) + " scale " +
         std::to_string(c.scaleType) + " op " + (c.transA ? "T" : "N") + (c.transB ? "T" : "N") +
         " epilogue " + std::to_string(c.epilogue) + " batch " + std::to_string(c.batch) + " A[" +
         lay(c.a) + "] B[" + lay(c.b) + "] D[" + lay(c.d) + "]";
}

LtGemm::~LtGemm() { release(); }

void LtGemm::release() {
  std::string ignored;
  const LtApi *a = prepared_ ? lt(ignored) : nullptr;
  prepared_ = false;
  if (!a)
    return;
  if (op_)
    a->descDestroy(op_);
  for (void *l : {la_, lb_, ld_})
    if (l)
      a->layoutDestroy(l);
  op_ = la_ = lb_ = ld_ = nullptr;
}

namespace {
bool makeLayout(const LtApi &a, const LtLayout &l, int32_t batch, void *&out, const LtCall &call,
                std::string &error) {
  if (!check(a, a.layoutCreate(&out, l.type, l.rows, l.cols, l.ld), "cublasLtMatrixLayoutCreate",
             call, error))
    return false;
  if (batch == 1)
    return true;
  return check(a, a.layoutSet(out, kLayoutBatchCount, &batch, sizeof batch),
               "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", call, error) &&
         check(a, a.layoutSet(out, kLayoutBatchStride, &l.batchStride, sizeof l.batchStride),
               "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", call, error);
}
} // namespace

bool LtGemm::prepare(const void *pa, const void *pb, const void *pc, const void *bias,
                     size_t workspaceBytes, std::string &error) {
  uint32_t align = alignmentOf({pa, pb, pc, bias});
  if (prepared_ && align >= align_)
    return true;
  release();
  align_ = align;
  const LtApi *a = lt(error);
  if (!a || !lowerGemm(desc_, call_, error))
    return false;
  const LtCall &c = call_;
  if (!check(*a, a->descCreate(&op_, c.computeType, c.scaleType), "cublasLtMatmulDescCreate", c,
             error))
    return false;
  prepared_ = true; // the destructor frees what was created from here on
  bool ok = check(*a, a->descSet(op_, kDescTransA, &c.transA, sizeof c.transA),
                  "cublasLtMatmulDescSetAttribute(TRANSA)", c, error) &&
            check(*a, a->descSet(op_, kDescTransB, &c.transB, sizeof c.transB),
                  "cublasLtMatmulDescSetAttribute(TRANSB)", c, error) &&
            check(*a, a->descSet(op_, kDescEpilogue, &c.epilogue, sizeof c.epilogue),
                  "cublasLtMatmulDescSetAttribute(EPILOGUE)", c, error);
  if (ok && (c.epilogue & kEpiBias))
    ok = check(*a, a->descSet(op_, kDescBiasPointer, &bias, sizeof bias),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", c, error);
  ok = ok && makeLayout(*a, c.a, c.batch, la_, c, error) &&
       makeLayout(*a, c.b, c.batch, lb_, c, error) && makeLayout(*a, c.d, c.batch, ld_, c, error);
  if (!ok)
    return false;
  void *pref = nullptr;
  uint64_t ws = workspaceBytes;
  HeuristicResult result{};
  int found = 0;
  ok = check(*a, a->prefCreate(&pref), "cublasLtMatmulPreferenceCreate", c, error) &&
       check(*a, a->prefSet(pref, kPrefMaxWorkspace, &ws, sizeof ws),
             "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", c, error);
  for (int attr = kPrefMinAlignA; ok && attr < kPrefMinAlignA + 4; ++attr)
    ok = check(*a, a->prefSet(pref, attr, &align_, sizeof align_),
               "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)", c, error);
  ok = ok && check(*a, a->heuristic(a->handle, op_, la_, lb_, ld_, ld_, pref, 1, &result, &found),
                   "cublasLtMatmulAlgoGetHeuristic", c, error);
  if (pref)
    a->prefDestroy(pref);
  if (ok && found == 0) {
    error = "cublasLtMatmulAlgoGetHeuristic found no algorithm (" + describe(c) + ")";
    ok = false;
  }
  if (!ok) {
    release();
    return false;
  }
  for (int i = 0; i < 8; ++i)
    algo_[i] = result.algo[i];
  algoWorkspace_ = result.workspaceSize;
  return true;
}

bool LtGemm::run(const void *a, const void *b, void *c, const void *bias, void *workspace,
                 size_t workspaceBytes, CUstream stream, std::string &error) {
  if (!prepare(a, b, c, bias, workspaceBytes, error))
    return false;
  const LtApi *api = lt(error);
  if (call_.epilogue & kEpiBias) {
    if (!check(*api, api->descSet(op_, kDescBiasPointer, &bias, sizeof bias),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", call_, error))
      return false;
  }
  // alpha = 1, beta = 0 in the scale type (f32; f64 for f64 GEMMs, int32
  // for int8 ones).
  float one32 = 1.0f, zero32 = 0.0f;
  double one64 = 1.0, zero64 = 0.0;
  int32_t oneI = 1, zeroI = 0;
  const void *alpha = &one32, *beta = &zero32;
  if (call_.scaleType == kF64)
    alpha = &one64, beta = &zero64;
  else if (call_.scaleType == kI32)
    alpha = &oneI, beta = &zeroI;
  // cuBLASLt's A is kiln's B and its B kiln's A (column-major C^T).
  return check(*api,
               api->matmul(api->handle, op_, alpha, b, la_, a, lb_, beta, c, ld_, c, ld_, algo_,
                           workspace, workspaceBytes, stream),
               "cublasLtMatmul", call_, error);
}

} // namespace kiln::rt::cuda
