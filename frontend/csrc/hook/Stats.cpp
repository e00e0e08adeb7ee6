//===- Stats.cpp - the frontend's counters by name ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The one table from Python counter names to Counters members. No Python
// objects are touched here.
//===----------------------------------------------------------------------===//
#include "hook/Stats.h"

namespace kiln {
namespace {

/// A counter's Python name and its member.
struct CounterName {
  const char *name;
  long Counters::*member;
};

constexpr CounterName kCounterNames[] = {
    {"frames", &Counters::frames},
    {"graphs_compiled", &Counters::graphsCompiled},
    {"compiled_calls", &Counters::compiledCalls},
    {"cache_hits", &Counters::cacheHits},
    {"recompiles", &Counters::recompiles},
    {"graph_breaks", &Counters::graphBreaks},
    {"eager_calls", &Counters::eagerCalls},
    {"compile_time_us", &Counters::compileTimeUs},
    {"capture_time_us", &Counters::captureTimeUs},
    {"cache_hits_disk", &Counters::cacheHitsDisk},
    {"cache_misses_disk", &Counters::cacheMissesDisk},
    {"cache_corrupt_disk", &Counters::cacheCorruptDisk},
    {"dynamic_graphs", &Counters::dynamicGraphs},
    {"dynamic_specialized", &Counters::dynamicSpecialized},
    {"dynamic_numbers", &Counters::dynamicNumbers},
    {"fallback_ops", &Counters::fallbackOps},
    {"fallback_calls", &Counters::fallbackCalls},
    {"input_copies", &Counters::inputCopies},
    {"compiled_backwards", &Counters::compiledBackwards},
    {"eager_backwards", &Counters::eagerBackwards},
    {"backward_calls", &Counters::backwardCalls},
    {"saved_activations", &Counters::savedActivations},
    {"saved_activation_bytes", &Counters::savedActivationBytes},
    {"saved_activations_freed", &Counters::savedActivationsFreed},
};

} // namespace

std::map<std::string, long> Counters::byName() const {
  std::map<std::string, long> out;
  for (const CounterName &c : kCounterNames)
    out.emplace(c.name, this->*c.member);
  return out;
}

} // namespace kiln
