//===- Log.h - KILN_LOGS channels ---------------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The one registry of log channels (graph, graph_breaks, recompiles, guards,
// ir, cache, fallbacks, dynamic) and of the options the Python side pushes
// down (kiln/config.py owns the environment variables; C++ reads none
// directly). Implemented in Log.cpp.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_LOG_H
#define KILN_FRONTEND_LOG_H

#include <cstdint>
#include <string>

namespace kiln {

/// Log channels selectable with KILN_LOGS.
enum class LogChannel {
  Graph,
  GraphBreaks,
  Recompiles,
  Guards,
  Ir,
  Cache,
  Fallbacks,
  Dynamic,
  Count
};

/// Options pushed from kiln/config.py.
struct Options {
  bool channels[static_cast<int>(LogChannel::Count)] = {};
  std::string debugDir;
  int recompileLimit = 8;
  /// The on-disk compile cache folder; empty when disabled.
  std::string cacheDir;
  /// Bound on the cache folder's size in bytes (KILN_CACHE_MAX_MB); 0 is
  /// unbounded.
  uint64_t cacheMaxBytes = 0;
  /// Parallel loops allowed (they are used only when torch runs more than
  /// one thread); false compiles every loop serial.
  bool parallelLoops = true;
  /// Register LLVM's perf JIT listener for compiled code.
  bool perfJitdump = false;
  /// Graphs that need gradients compile their backward (kiln-autodiff);
  /// false keeps the eager recompute backward (read at compile).
  bool compiledBackward = true;
  /// f32 convolutions through oneDNN (CpuCompileOptions::dnnlConvs).
  bool dnnlConvs = false;
  /// kiln-layout on graphs with convolutions (CpuCompileOptions::layout).
  bool layout = true;
  /// Convolution gradients through oneDNN (CpuCompileOptions::dnnlConvGrads).
  bool dnnlConvGrads = true;
  /// dynamic=None: an int argument whose value changes becomes a symbolic
  /// int (hook/CodeCache.h markChangedNumbers).
  bool automaticDynamicNumbers = true;
};

/// The process-wide options.
Options &options();

/// The KILN_LOGS name of `channel` ("graph_breaks", ...).
const char *logChannelName(LogChannel channel);

/// True when `channel` is enabled.
inline bool logEnabled(LogChannel channel) { return options().channels[static_cast<int>(channel)]; }

/// Writes `[kiln:<channel>] message` to stderr when the channel is enabled,
/// or hands (channel, message) to kiln.explain's sink (setLogSink, Hook.h).
void log(LogChannel channel, const std::string &message);

} // namespace kiln

#endif // KILN_FRONTEND_LOG_H
