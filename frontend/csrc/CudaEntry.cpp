//===- CudaEntry.cpp - compiled entries that run on the CUDA backend --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CudaEntry.h. The CUDA backend lives in Python (kiln/cuda):
// compile_graph emits the captured IR, builds the launch plan and returns
// a runner; this file only picks the backend from the inputs' devices and
// calls the runner. Ownership: the runner is a new reference held by the
// entry; inputs are borrowed; results are new references.
//===----------------------------------------------------------------------===//
#include "CudaEntry.h"

#include "PyErrors.h"
#include "TensorInfo.h"

namespace kiln {

bool graphDevice(const std::vector<GraphInput> &inputs, const std::vector<Guard> &guards,
                 int &device, std::string &error) {
  device = TensorMeta::kCpuDevice;
  bool first = true;
  for (const GraphInput &in : inputs) {
    const Guard *guard = nullptr;
    for (const Guard &g : guards)
      if (g.kind == Guard::Kind::Tensor && g.source == in.source)
        guard = &g;
    if (!guard)
      continue;
    if (first) {
      device = guard->device;
      first = false;
    } else if (guard->device != device) {
      error = "graph inputs are on different devices (" + deviceName(device) + " and " +
              deviceName(guard->device) + ")";
      return false;
    }
  }
  return true;
}

bool compileForCuda(const std::string &irText, int device, Entry &entry, std::string &error) {
  PyRef mod = PyRef::steal(PyImport_ImportModule("kiln.cuda._frontend"));
  PyRef fn = mod ? PyRef::steal(PyObject_GetAttrString(mod.get(), "compile_graph")) : PyRef();
  PyRef text = PyRef::steal(PyUnicode_FromStringAndSize(irText.data(), (Py_ssize_t)irText.size()));
  PyRef dev = PyRef::steal(PyLong_FromLong(device));
  PyRef runner =
      fn && text && dev
          ? PyRef::steal(PyObject_CallFunctionObjArgs(fn.get(), text.get(), dev.get(), nullptr))
          : PyRef();
  if (!runner) {
    error = "CUDA backend: " + takePythonErrorText();
    return false;
  }
  entry.cudaRunner = std::move(runner);
  return true;
}

bool runCudaGraph(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                  std::vector<PyRef> &results) {
  PyRef args = PyRef::steal(PyTuple_New((Py_ssize_t)inputs.size()));
  if (!args)
    return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Py_INCREF(inputs[i]);
    PyTuple_SET_ITEM(args.get(), (Py_ssize_t)i, inputs[i]);
  }
  PyRef out = PyRef::steal(PyObject_Call(entry.cudaRunner.get(), args.get(), nullptr));
  if (!out)
    return false;
  if (!PyTuple_Check(out.get()) ||
      PyTuple_GET_SIZE(out.get()) != (Py_ssize_t)entry.results.size()) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: the CUDA graph returned the wrong results");
    return false;
  }
  results.clear();
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(out.get()); ++i)
    results.push_back(PyRef::borrow(PyTuple_GET_ITEM(out.get(), i)));
  return true;
}

} // namespace kiln
