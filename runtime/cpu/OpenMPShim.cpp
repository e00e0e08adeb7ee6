//===- OpenMPShim.cpp - the generated code's OpenMP calls on torch's libgomp ---===//
// SPDX-License-Identifier: Apache-2.0
//
// `convert-scf-to-openmp` and MLIR's OpenMP translation emit calls into the
// LLVM/Intel OpenMP runtime ABI (`__kmpc_fork_call`, static work sharing,
// barrier). Loading a second OpenMP runtime next to torch's libgomp would
// give the process two thread pools competing for the same cores, so kiln
// implements the few entry points its loops use on top of the libgomp that
// torch (and MKL's GNU threading layer) already use: one pool, and the
// thread count eager uses (kilnSetNumThreads, set per call from
// torch.get_num_threads()). Without libgomp, or at one thread, the
// outlined loop runs inline on the calling thread.
//
// Only what kiln-cpu-parallelize-loops produces is supported: parallel regions
// with up to kMaxForkArgs pointer arguments (MLIR passes one aggregate) and
// unchunked static schedules; the JIT refuses modules needing more
// (checkOpenMPCalls).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/OpenMPShim.h"

#include "runtime/cpu/Threads.h"

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <dlfcn.h>
#include <mutex>

namespace {

/// libgomp's entry points (null when it cannot be loaded).
struct Gomp {
  void (*parallel)(void (*)(void *), void *, unsigned, unsigned) = nullptr;
  void (*barrier)() = nullptr;
  int (*threadNum)() = nullptr;
  int (*numThreads)() = nullptr;
};

const Gomp &gomp() {
  static Gomp g;
  static std::once_flag once;
  std::call_once(once, [] {
    // torch's own copy when it is loaded (BlasShims made it global), else
    // the system's.
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
      h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
      return;
    Gomp found;
    found.parallel = reinterpret_cast<decltype(found.parallel)>(dlsym(h, "GOMP_parallel"));
    found.barrier = reinterpret_cast<decltype(found.barrier)>(dlsym(h, "GOMP_barrier"));
    found.threadNum = reinterpret_cast<decltype(found.threadNum)>(dlsym(h, "omp_get_thread_num"));
    found.numThreads =
        reinterpret_cast<decltype(found.numThreads)>(dlsym(h, "omp_get_num_threads"));
    if (found.parallel && found.barrier && found.threadNum && found.numThreads)
      g = found;
  });
  return g;
}

int threadNum() { return gomp().threadNum ? gomp().threadNum() : 0; }
int numThreads() { return gomp().numThreads ? gomp().numThreads() : 1; }

std::atomic<long> gThreaded{0}, gInline{0};

using Microtask = void (*)(int32_t *, int32_t *, ...);

/// One parallel region: the outlined function and its arguments.
struct Region {
  Microtask task;
  int32_t argc;
  void *args[kiln::rt::kMaxForkArgs];
};

void runRegion(void *data) {
  auto *r = static_cast<Region *>(data);
  int32_t gtid = threadNum(), btid = 0;
  void **a = r->args;
  switch (r->argc) {
  case 0:
    r->task(&gtid, &btid);
    break;
  case 1:
    r->task(&gtid, &btid, a[0]);
    break;
  case 2:
    r->task(&gtid, &btid, a[0], a[1]);
    break;
  case 3:
    r->task(&gtid, &btid, a[0], a[1], a[2]);
    break;
  case 4:
    r->task(&gtid, &btid, a[0], a[1], a[2], a[3]);
    break;
  case 5:
    r->task(&gtid, &btid, a[0], a[1], a[2], a[3], a[4]);
    break;
  case 6:
    r->task(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5]);
    break;
  case 7:
    r->task(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    break;
  default:
    r->task(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    break;
  }
}

/// The region of a `__kmpc_fork_call(loc, argc, task, args...)`.
Region gather(int32_t argc, Microtask task, va_list ap) {
  Region r{task, argc, {}};
  for (int32_t i = 0; i < argc && i < kiln::rt::kMaxForkArgs; ++i)
    r.args[i] = va_arg(ap, void *);
  return r;
}

/// Runs `r` on kilnGetNumThreads() threads of libgomp's team, or inline.
void runParallel(Region &r) {
  int threads = kilnGetNumThreads();
  if (threads <= 1 || !gomp().parallel) {
    gInline.fetch_add(1, std::memory_order_relaxed);
    return runRegion(&r);
  }
  gThreaded.fetch_add(1, std::memory_order_relaxed);
  gomp().parallel(&runRegion, &r, static_cast<unsigned>(threads), 0);
}

/// kmp_sch_static: each thread gets one contiguous share, the first
/// `trips % threads` threads one iteration more.
constexpr int32_t kStaticUnchunked = 34;

/// Narrows [*lower, *upper] (inclusive, step `incr`) to this thread's
/// share; an empty share has *upper = *lower - incr.
template <typename T>
void staticInit(int32_t schedule, int32_t *lastIter, T *lower, T *upper, T *stride, T incr) {
  using U = std::make_unsigned_t<T>;
  T lo = *lower, hi = *upper;
  bool empty = incr > 0 ? hi < lo : hi > lo;
  U trips = empty ? 0 : U((hi - lo) / incr) + 1;
  U tid = U(threadNum()), nth = U(numThreads());
  if (schedule != kStaticUnchunked) { // anything else: all on thread 0 (serial, correct)
    nth = 1;
    if (tid != 0)
      trips = 0;
    tid = 0;
  }
  U small = trips / nth, extra = trips % nth;
  U begin = tid * small + (tid < extra ? tid : extra);
  U count = small + (tid < extra ? 1 : 0);
  *lower = T(lo + T(begin) * incr);
  *upper = T(*lower + (T(count) - 1) * incr);
  *lastIter = count != 0 && begin + count == trips;
  *stride = T(trips * U(incr));
}

/// Unsigned bounds with a signed stride: the share is computed on the
/// bounds' type (kiln's loops are normalized to step 1).
template <typename U, typename S>
void staticInitUnsigned(int32_t s, int32_t *last, U *lo, U *hi, S *stride, S incr) {
  U st = 0;
  staticInit<U>(s, last, lo, hi, &st, static_cast<U>(incr));
  *stride = static_cast<S>(st);
}

} // namespace

extern "C" {

int32_t kilnKmpcGlobalThreadNum(void *) { return threadNum(); }

void kilnKmpcForkCall(void *, int32_t argc, Microtask task, ...) {
  va_list ap;
  va_start(ap, task);
  Region r = gather(argc, task, ap);
  va_end(ap);
  runParallel(r);
}

void kilnKmpcStaticInit4(void *, int32_t, int32_t s, int32_t *last, int32_t *lo, int32_t *hi,
                         int32_t *stride, int32_t incr, int32_t) {
  staticInit(s, last, lo, hi, stride, incr);
}
void kilnKmpcStaticInit4u(void *, int32_t, int32_t s, int32_t *last, uint32_t *lo, uint32_t *hi,
                          int32_t *stride, int32_t incr, int32_t) {
  staticInitUnsigned(s, last, lo, hi, stride, incr);
}
void kilnKmpcStaticInit8(void *, int32_t, int32_t s, int32_t *last, int64_t *lo, int64_t *hi,
                         int64_t *stride, int64_t incr, int64_t) {
  staticInit(s, last, lo, hi, stride, incr);
}
void kilnKmpcStaticInit8u(void *, int32_t, int32_t s, int32_t *last, uint64_t *lo, uint64_t *hi,
                          int64_t *stride, int64_t incr, int64_t) {
  staticInitUnsigned(s, last, lo, hi, stride, incr);
}
void kilnKmpcStaticFini(void *, int32_t) {}

void kilnKmpcBarrier(void *, int32_t) {
  if (gomp().barrier && numThreads() > 1)
    gomp().barrier();
}

#ifdef KILN_EXPORT_KMPC_NAMES
// The runtime ABI's own names, for code linked outside kiln's JIT
// (mlir-cpu-runner's -shared-libs, test_decompose_numerics.py): the JIT
// maps them to the kiln* functions above instead.
int32_t __kmpc_global_thread_num(void *loc) { return kilnKmpcGlobalThreadNum(loc); }
void __kmpc_fork_call(void *, int32_t argc, Microtask task, ...) {
  va_list ap;
  va_start(ap, task);
  Region r = gather(argc, task, ap);
  va_end(ap);
  runParallel(r);
}
void __kmpc_for_static_init_4(void *l, int32_t g, int32_t s, int32_t *last, int32_t *lo,
                              int32_t *hi, int32_t *st, int32_t incr, int32_t c) {
  kilnKmpcStaticInit4(l, g, s, last, lo, hi, st, incr, c);
}
void __kmpc_for_static_init_4u(void *l, int32_t g, int32_t s, int32_t *last, uint32_t *lo,
                               uint32_t *hi, int32_t *st, int32_t incr, int32_t c) {
  kilnKmpcStaticInit4u(l, g, s, last, lo, hi, st, incr, c);
}
void __kmpc_for_static_init_8(void *l, int32_t g, int32_t s, int32_t *last, int64_t *lo,
                              int64_t *hi, int64_t *st, int64_t incr, int64_t c) {
  kilnKmpcStaticInit8(l, g, s, last, lo, hi, st, incr, c);
}
void __kmpc_for_static_init_8u(void *l, int32_t g, int32_t s, int32_t *last, uint64_t *lo,
                               uint64_t *hi, int64_t *st, int64_t incr, int64_t c) {
  kilnKmpcStaticInit8u(l, g, s, last, lo, hi, st, incr, c);
}
void __kmpc_for_static_fini(void *l, int32_t g) { kilnKmpcStaticFini(l, g); }
void __kmpc_barrier(void *l, int32_t g) { kilnKmpcBarrier(l, g); }
#endif

} // extern "C"

namespace kiln::rt {

std::vector<std::pair<const char *, void *>> openMPShimSymbols() {
  return {
      {"__kmpc_global_thread_num", reinterpret_cast<void *>(&kilnKmpcGlobalThreadNum)},
      {"__kmpc_fork_call", reinterpret_cast<void *>(&kilnKmpcForkCall)},
      {"__kmpc_for_static_init_4", reinterpret_cast<void *>(&kilnKmpcStaticInit4)},
      {"__kmpc_for_static_init_4u", reinterpret_cast<void *>(&kilnKmpcStaticInit4u)},
      {"__kmpc_for_static_init_8", reinterpret_cast<void *>(&kilnKmpcStaticInit8)},
      {"__kmpc_for_static_init_8u", reinterpret_cast<void *>(&kilnKmpcStaticInit8u)},
      {"__kmpc_for_static_fini", reinterpret_cast<void *>(&kilnKmpcStaticFini)},
      {"__kmpc_barrier", reinterpret_cast<void *>(&kilnKmpcBarrier)},
  };
}

ParallelRegionStats parallelRegionStats() {
  return {gThreaded.load(std::memory_order_relaxed), gInline.load(std::memory_order_relaxed)};
}

} // namespace kiln::rt
