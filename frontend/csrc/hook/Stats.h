//===- Stats.h - the frontend's counters --------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What kiln.stats() reports: a plain struct of counters bumped by member on
// the hot path (no string lookups), and the one table that gives each
// counter its Python name. The counters live in FrontendState (one per
// process, see FrontendState.h); `counters()` reaches them from code that
// does not otherwise need the frontend state (Program.cpp's fallback calls).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_STATS_H
#define KILN_FRONTEND_HOOK_STATS_H

#include <map>
#include <string>

namespace kiln {

/// Counters since the last reset (kiln.stats(); names in counterNames()).
/// Bumped with the GIL held.
struct Counters {
  long frames = 0;             ///< frames the hook looked at
  long graphsCompiled = 0;     ///< entries compiled
  long compiledCalls = 0;      ///< compiled entries run
  long cacheHits = 0;          ///< calls that found a matching entry
  long recompiles = 0;         ///< captures of a code that already had entries
  long graphBreaks = 0;        ///< graph breaks reported (hook/BreakLog.h)
  long eagerCalls = 0;         ///< frames run eagerly after a failed capture
  long compileTimeUs = 0;      ///< capture + compile, microseconds
  long captureTimeUs = 0;      ///< symbolic interpretation alone, microseconds
  long cacheHitsDisk = 0;      ///< compilations loaded from the on-disk cache
  long cacheMissesDisk = 0;    ///< compilations the on-disk cache did not hold
  long cacheCorruptDisk = 0;   ///< invalid on-disk cache entries met
  long dynamicGraphs = 0;      ///< compiled graphs with symbolic sizes
  long dynamicSpecialized = 0; ///< symbolic captures given up for static sizes
  long dynamicNumbers = 0;     ///< int arguments made symbolic after a value change
  long fallbackOps = 0;        ///< torch calls compiled into graphs (per-op fallback)
  long fallbackCalls = 0;      ///< those calls run (Program.cpp)
  /// Caller's tensors copied to row-major before a compiled call (strided
  /// views; a dense tensor in another dim order is passed as it is:
  /// capture/values/InputLayouts.h).
  long inputCopies = 0;
  long compiledBackwards = 0; ///< graphs compiled with their backward (CompiledGrad.h)
  long eagerBackwards = 0;    ///< graphs needing gradients that keep the eager backward
  long backwardCalls = 0;     ///< compiled backwards run
  /// Per call of each graph compiled with its backward, summed over those
  /// graphs: the intermediates its forward keeps for the backward (the
  /// min-cut partitioner's choice, transforms/autodiff/Partition.h) and
  /// their bytes.
  long savedActivations = 0;
  long savedActivationBytes = 0;
  /// Saved activations a compiled backward dropped right after its last
  /// read of each, before it returned (runtime/cpu/CallHooks.h).
  long savedActivationsFreed = 0;

  /// Zeroes every counter.
  void reset() { *this = Counters(); }
  /// Every counter by its Python name ("frames", "cache_hits", ...).
  std::map<std::string, long> byName() const;
};

/// The process's counters (owned by FrontendState).
Counters &counters();

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_STATS_H
