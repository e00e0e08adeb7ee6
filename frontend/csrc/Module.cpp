//===- Module.cpp - the kiln._C extension module (nanobind) ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Python bindings of the frontend: compiled calls, eager recompute, the
// entry runner used by autograd glue, options, counters and reset. Python
// hands C++ options and callables, never per-pass bindings.
//===----------------------------------------------------------------------===//
#include "CudaBindings.h"
#include "Entry.h"
#include "Export.h"
#include "InputStamps.h"
#include "PoolProfiler.h"
#include "hook/ActivationBudget.h"
#include "hook/Hook.h"
#include "hook/Recompute.h"
#include "hook/Stats.h"
#include "Log.h"
#include "capture/Coverage.h"
#include "runtime/cpu/BlasShims.h"
#include "runtime/cpu/OpenMPShim.h"
#include "runtime/cpu/BufferPool.h"
#include "runtime/cpu/RuntimeLog.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace kiln;

namespace {

nb::object checked(PyObject *r) {
  if (!r)
    throw nb::python_error();
  return nb::steal(r);
}

/// The runtime's fallback messages (RuntimeLog.h) as KILN_LOGS=fallbacks
/// lines; called from compiled code, which runs without the GIL.
void runtimeFallback(const char *message) {
  if (!logEnabled(LogChannel::Fallbacks))
    return;
  PyGILState_STATE gil = PyGILState_Ensure();
  log(LogChannel::Fallbacks, message);
  PyGILState_Release(gil);
}

void setOptions(const std::vector<std::string> &logs, const std::string &debugDir,
                int recompileLimit, const std::string &cacheDir, bool parallelLoops,
                bool perfJitdump, uint64_t cacheMaxMb, bool compiledBackward, bool dnnlConvs,
                bool layout, bool dnnlConvGrads, bool automaticDynamicNumbers) {
  Options &o = options();
  for (bool &c : o.channels)
    c = false;
  for (const std::string &l : logs) {
    bool known = false;
    std::string names;
    for (int i = 0; i < static_cast<int>(LogChannel::Count); ++i) {
      const char *name = logChannelName(static_cast<LogChannel>(i));
      names += std::string(name) + ", ";
      if (l == name || l == "all")
        o.channels[i] = known = true;
    }
    if (!known)
      throw nb::value_error(
          ("unknown KILN_LOGS channel '" + l + "' (known: " + names + "all)").c_str());
  }
  o.debugDir = debugDir;
  o.recompileLimit = recompileLimit;
  o.cacheDir = cacheDir;
  o.cacheMaxBytes = cacheMaxMb << 20;
  o.parallelLoops = parallelLoops;
  o.perfJitdump = perfJitdump;
  o.compiledBackward = compiledBackward;
  o.dnnlConvs = dnnlConvs;
  o.layout = layout;
  o.dnnlConvGrads = dnnlConvGrads;
  o.automaticDynamicNumbers = automaticDynamicNumbers;
}

/// The graph breaks since the last reset as dicts (kiln.explain).
nb::list graphBreaksForPython() {
  nb::list out;
  for (const BreakRecord &r : graphBreaks()) {
    nb::dict d;
    d["category"] = breakCategoryName(r.category);
    d["function"] = r.function;
    d["message"] = r.message;
    d["location"] = r.location;
    d["hint"] = r.hint;
    d["resumed"] = r.resumed;
    d["text"] = formatBreak(r);
    out.append(d);
  }
  return out;
}

const Entry &entryOf(nb::capsule entryCapsule) {
  const Entry *entry = entryOfCapsule(entryCapsule.ptr());
  if (!entry)
    throw nb::python_error();
  return *entry;
}

/// The results of running `entry` on `in` as a tuple (`owned`: runGraph's).
nb::tuple runOn(const Entry &entry, const std::vector<PyObject *> &in,
                llvm::MutableArrayRef<PyRef> owned = {}) {
  std::vector<PyRef> results;
  if (!runGraph(entry, in, results, owned))
    throw nb::python_error();
  nb::list out;
  for (PyRef &r : results)
    out.append(nb::steal(r.release()));
  return nb::tuple(out);
}

nb::tuple runEntryFromPython(nb::capsule entryCapsule, nb::args inputs) {
  std::vector<PyObject *> in;
  for (nb::handle h : inputs)
    in.push_back(h.ptr());
  return runOn(entryOf(entryCapsule), in);
}

/// _run_backward: `inputs`, then the tensors of the list `consume` (if not
/// None), which the call takes over (the list is left holding None) and
/// drops where the compiled code is done with each.
nb::tuple runBackwardFromPython(nb::capsule entryCapsule, nb::args inputs, nb::handle consume) {
  if (!consume.is_valid() || consume.is_none())
    return runEntryFromPython(entryCapsule, inputs);
  const Entry &entry = entryOf(entryCapsule);
  if (!PyList_Check(consume.ptr()))
    throw nb::type_error("_run_backward: consume must be a list");
  Py_ssize_t n = PyList_GET_SIZE(consume.ptr());
  std::vector<PyRef> owned(inputs.size() + n);
  std::vector<PyObject *> in;
  for (nb::handle h : inputs)
    in.push_back(h.ptr());
  for (Py_ssize_t j = 0; j < n; ++j) {
    PyObject *t = PyList_GET_ITEM(consume.ptr(), j);
    owned[in.size()] = PyRef::borrow(t);
    in.push_back(t);
  }
  for (Py_ssize_t j = 0; j < n; ++j) // the list's references go: the call's are the last
    PyList_SetItem(consume.ptr(), j, Py_NewRef(Py_None));
  nb::tuple out = runOn(entry, in, owned);
  // kiln.stats()["saved_activations_freed"]: the slots the call emptied.
  counters().savedActivationsFreed +=
      std::count_if(owned.begin() + inputs.size(), owned.end(), [](const PyRef &r) { return !r; });
  return out;
}

} // namespace

NB_MODULE(_C, m) {
  m.doc() = "kiln's C++ frontend: frame hook, bytecode capture, compiled calls";
  if (!initHook())
    throw nb::python_error();
  kilnSetRuntimeLogSink(&runtimeFallback);
  reportPoolToTorchProfiler(); // kiln's intermediates in torch.profiler's memory events
  m.def(
      "call",
      [](nb::handle fn, nb::tuple args, nb::dict kwargs, bool fullgraph, nb::handle apply,
         int dynamic) {
        return checked(
            callCompiled(fn.ptr(), args.ptr(), kwargs.ptr(), fullgraph, apply.ptr(), dynamic));
      },
      nb::arg("fn"), nb::arg("args"), nb::arg("kwargs"), nb::arg("fullgraph"), nb::arg("apply"),
      nb::arg("dynamic") = 2,
      "Calls fn(*args, **kwargs) with kiln's frame hook active. dynamic: 0 static sizes "
      "(dynamic=False), 1 every size >= 2 symbolic (True), 2 sizes become symbolic after "
      "they change (None).");
  m.def(
      "call_eager",
      [](nb::handle fn, nb::tuple args, nb::dict kwargs) {
        return checked(callEager(fn.ptr(), args.ptr(), kwargs.ptr()));
      },
      "Calls fn(*args, **kwargs) eagerly (hook inactive).");
  m.def("_run_entry", &runEntryFromPython, "Runs a compiled entry on input tensors.");
  m.def(
      "_run_backward",
      [](nb::capsule entry, nb::args inputs, nb::kwargs kwargs) {
        ++counters().backwardCalls; // kiln.stats()["backward_calls"]
        nb::handle consume = kwargs.contains("consume") ? kwargs["consume"] : nb::handle();
        return runBackwardFromPython(entry, inputs, consume);
      },
      "Runs a compiled backward (hook/CompiledGrad.h) on gradients and saved tensors; "
      "consume=list: more inputs, taken out of the list (left holding None) so the backward "
      "frees each after its last read.");
  m.def("set_options", &setOptions, nb::arg("logs"), nb::arg("debug_dir"),
        nb::arg("recompile_limit"), nb::arg("cache_dir") = "", nb::arg("parallel_loops") = true,
        nb::arg("perf_jitdump") = false, nb::arg("cache_max_mb") = 0,
        nb::arg("compiled_backward") = true, nb::arg("dnnl_convs") = false,
        nb::arg("layout") = true, nb::arg("dnnl_conv_grads") = true,
        nb::arg("automatic_dynamic_numbers") = true);
  m.def("set_freeze_weights", &setFreezeWeights, nb::arg("on"),
        "kiln.config.freeze_weights: oneDNN convolutions reorder a weight once per tensor "
        "and version (input stamps) instead of on every call.");
  m.def("set_activation_memory_budget", &setActivationMemoryBudget, nb::arg("budget"),
        "kiln.config.activation_memory_budget: the memory-budget in [0, 1] of kiln-autodiff's "
        "min-cut partitioner for graphs compiled from now on (1: the default).");
  m.def("stats", &stats, "Counters since the last reset.");
  m.def("reset", &resetCaches, "Drops all compiled entries, zeroes counters, forgets breaks.");
  m.def("graph_breaks", &graphBreaksForPython,
        "The graph breaks since the last reset, oldest first: dicts of category, function, "
        "message, location (file:line), hint, resumed and text (the graph_breaks log line).");
  m.def(
      "set_log_sink", [](nb::handle sink) { setLogSink(sink.is_none() ? nullptr : sink.ptr()); },
      nb::arg("sink").none(),
      "Routes enabled log channels to sink(channel, message) (None: stderr).");
  m.def(
      "set_blas_library",
      [](const std::string &path) { return kilnSetBlasLibrary(path.c_str()) != 0; },
      "Compiled GEMMs call oneMKL's libmkl_rt at path ('' or 'openblas': OpenBLAS).");
  m.def(
      "mapped_ops",
      [] {
        nb::list functions, methods, duplicates;
        nb::dict params;
        for (const MappedFunction &f : mappedFunctions()) {
          functions.append(nb::make_tuple(f.module, f.name, f.op));
          params[nb::str((f.module + "." + f.name).c_str())] = nb::cast(f.params);
        }
        for (const MappedMethod &mm : mappedMethods()) {
          methods.append(nb::make_tuple(mm.name, mm.op, mm.inplace));
          params[nb::str(("Tensor." + mm.name).c_str())] = nb::cast(mm.params);
        }
        for (const std::string &name : duplicateOpNames())
          duplicates.append(name);
        nb::dict d;
        d["functions"] = functions;
        d["methods"] = methods;
        d["params"] = params;
        d["duplicates"] = duplicates;
        return d;
      },
      "The torch -> kiln op registry: functions (module, name, op), Tensor "
      "methods (name, op, in-place form mapped), params ('module.name' or "
      "'Tensor.name' -> parameter names) and duplicates (names registered "
      "twice; empty); see `python -m kiln.coverage`.");
  m.def(
      "blas_library", [] { return std::string(kilnBlasLibrary()); },
      "The BLAS compiled GEMMs call.");
  m.def(
      "intermediate_memory",
      [](bool resetPeak) {
        kiln::rt::BufferPoolStats s = kiln::rt::bufferPoolStats();
        if (resetPeak)
          kiln::rt::resetBufferPoolPeak();
        nb::dict d;
        d["live"] = s.liveBytes;
        d["peak"] = s.peakBytes;
        d["profiled"] = poolReportsToTorchProfiler();
        return d;
      },
      nb::arg("reset_peak") = false,
      "Bytes of compiled code's intermediate buffers: live now and the peak since the "
      "last reset_peak=True (which then restarts it at the live bytes); profiled: whether "
      "torch.profiler's memory events include them (PoolProfiler.h).");
  m.def(
      "parallel_regions",
      [] {
        kiln::rt::ParallelRegionStats s = kiln::rt::parallelRegionStats();
        nb::dict d;
        d["threaded"] = s.threaded;
        d["inline"] = s.inlined;
        return d;
      },
      "How many parallel loops compiled CPU code has run: on several threads "
      "(torch.get_num_threads() > 1) or inline on the calling thread.");
  registerCudaBindings(m);
  registerExportBindings(m);
}
