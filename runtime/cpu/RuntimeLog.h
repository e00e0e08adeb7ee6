//===- RuntimeLog.h - runtime messages for KILN_LOGS ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// How code called by compiled graphs reports a fallback it took at run time
// (a oneDNN primitive it could not create, ...). The runtime links no
// frontend code: the frontend registers a sink (kilnSetRuntimeLogSink) that
// routes the message to KILN_LOGS=fallbacks; without one the message goes
// to stderr. The sink is called on the calling thread, without the GIL.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_RUNTIMELOG_H
#define KILN_RUNTIME_CPU_RUNTIMELOG_H

#include <string>

extern "C" {
/// sink(message) receives each runtime fallback message (nullptr: stderr).
void kilnSetRuntimeLogSink(void (*sink)(const char *message));
}

namespace kiln::rt {
/// Reports a run-time fallback (one line, no trailing newline).
void logFallback(const std::string &message);
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_RUNTIMELOG_H
