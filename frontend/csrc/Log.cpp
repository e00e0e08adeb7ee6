//===- Log.cpp - KILN_LOGS channels ------------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Log.h: the process-wide options and the writer of log lines
// (stderr, or kiln.explain's sink held by FrontendState). Ownership: the
// message string passed to the sink is a new reference released here.
//===----------------------------------------------------------------------===//
#include "Log.h"

#include "PyRef.h"
#include "hook/FrontendState.h"

#include "llvm/Support/raw_ostream.h"

namespace kiln {

Options &options() {
  static Options o;
  return o;
}

const char *logChannelName(LogChannel channel) {
  static const char *names[] = {"graph", "graph_breaks", "recompiles", "guards",
                                "ir",    "cache",        "fallbacks",  "dynamic"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(LogChannel::Count),
                "one name per log channel");
  return names[static_cast<int>(channel)];
}

void log(LogChannel channel, const std::string &message) {
  if (!logEnabled(channel))
    return;
  const char *name = logChannelName(channel);
  if (PyObject *sink = frontend().logSink) {
    // Called with the GIL held; a pending exception of the caller survives.
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyRef text =
        PyRef::steal(PyUnicode_DecodeUTF8(message.data(), (Py_ssize_t)message.size(), "replace"));
    PyRef r = text ? PyRef::steal(PyObject_CallFunction(sink, "sO", name, text.get())) : PyRef();
    if (!r)
      PyErr_WriteUnraisable(sink);
    PyErr_Restore(type, value, tb);
    return;
  }
  llvm::errs() << "[kiln:" << name << "] " << message << "\n";
}

} // namespace kiln
