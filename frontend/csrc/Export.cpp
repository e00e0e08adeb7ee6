//===- Export.cpp - what kiln.export records of one compilation --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Export.h. The record is process-wide and guarded by the GIL
// (kiln.export holds it except while LLVM compiles, which happens under
// the compile lock like every compilation).
//===----------------------------------------------------------------------===//
#include "Export.h"

#include "Log.h"
#include "TensorInfo.h"
#include "codegen/cpu/JitCompiler.h"
#include "codegen/cpu/ObjectCode.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace kiln {
namespace {

struct ExportRecord {
  bool active = false;
  const Entry *entry = nullptr;
  std::string error; ///< why the model cannot be exported (first reason)
  std::string ir;
  std::string object;
  std::string baselineObject; ///< for the architecture's baseline CPU (when asked)
  bool baseline = false;
  std::vector<std::string> imports;
  nb::dict info; ///< inputs' sources, results, symbols
  nb::tuple inputs, results;
  bool ran = false;
};

ExportRecord &record() {
  static ExportRecord *r = new ExportRecord(); // never destroyed: holds Python objects
  return *r;
}

/// kiln's DType as the artifact plan spells it (runtime/artifact/Plan.h).
const char *planDType(DType d) {
  static const char *names[] = {"f32", "f64", "f16", "bf16", "i64", "i32", "bool"};
  return names[static_cast<int>(d)];
}

/// Why `cap`/`entry` cannot become an artifact, or "".
std::string refusal(const Capture &cap, const Entry &entry) {
  for (const CaptureStep &s : cap.steps)
    if (s.fallback >= 0) {
      const FallbackCall &call = cap.fallbacks[s.fallback];
      return "the graph calls " + call.name +
             (call.location.empty() ? "" : " at " + call.location) +
             " through torch (per-op fallback: kiln has no lowering for it), and an artifact "
             "runs without torch";
    }
  if (!cap.steps.empty())
    return "the graph is split into segments";
  if (entry.results.empty())
    return "the model returns no tensor computed by the graph";
  if (!entry.effects.empty())
    return "the model has side effects (in-place updates of inputs, buffers or attributes) "
           "that an artifact cannot replay";
  for (const GraphInput &in : entry.inputs)
    if (in.kind == GraphInput::Kind::Seed)
      return "the graph draws random numbers (an artifact has no torch generator)";
    else if (!in.isTensor())
      return "an int argument is a symbolic size of the graph (an artifact takes tensor inputs)";
  for (size_t i = 0; i < entry.symbols.size(); ++i)
    if (entry.symbols[i].def)
      return "the graph has a size computed from symbolic sizes: " + describeSymbol(entry, i) +
             " (export with static shapes)";
  if (!entry.sizeGuards.empty())
    return "the graph depends on a condition on symbolic sizes: " +
           describeSymbol(entry, entry.symbols.size()) + " (export with static shapes)";
  for (const Guard &g : entry.guards)
    if (g.kind == Guard::Kind::Tensor && g.device != TensorMeta::kCpuDevice)
      return "an input is not on the CPU (CUDA artifacts are not supported yet)";
  return "";
}

/// The entry's inputs, results and symbols as Python values.
nb::dict describeEntry(const Entry &entry) {
  nb::dict d;
  nb::list inputs, results, symbols;
  for (const GraphInput &in : entry.inputs)
    inputs.append(
        nb::make_tuple(entry.sources.describe(in.source, entry.localNames), in.makeContiguous));
  for (const GraphOutput &o : entry.results) {
    nb::list sizes, symbolOf;
    for (int64_t s : o.sizes)
      sizes.append(s);
    for (int s : o.symbolOf)
      symbolOf.append(s);
    results.append(nb::make_tuple(sizes, planDType(o.dtype), symbolOf));
  }
  for (size_t i = 0; i < entry.symbols.size(); ++i) {
    nb::list dims;
    for (auto [input, dim] : entry.symbols[i].dims)
      dims.append(nb::make_tuple(input, dim));
    symbols.append(nb::make_tuple(entry.symbols[i].captured, dims, describeSymbol(entry, i)));
  }
  d["inputs"] = inputs;
  d["results"] = results;
  d["symbols"] = symbols;
  d["index_check"] = entry.indexCheck;
  return d;
}

} // namespace

bool exportRecording() { return record().active; }

void recordExportEntry(mlir::OwningOpRef<mlir::ModuleOp> copy, const Capture &cap,
                       const std::string &irText, const Entry &entry) {
  ExportRecord &r = record();
  if (!r.active || !r.error.empty())
    return;
  if (r.entry) {
    r.error = "the model compiles to more than one graph (" + r.entry->name + ", then " +
              entry.name + ")";
    return;
  }
  r.entry = &entry;
  r.error = refusal(cap, entry);
  if (!r.error.empty())
    return;
  r.ir = irText;
  r.info = describeEntry(entry);
  bool parallel = options().parallelLoops && torchNumThreads() > 1;
  std::string error, object, baselineObject;
  std::vector<std::string> imports, baselineImports;
  mlir::OwningOpRef<mlir::ModuleOp> second(r.baseline ? copy->clone() : nullptr);
  PyThreadState *saved = PyEval_SaveThread(); // LLVM runs without the GIL, as in the JIT
  object = mlir::kiln::compileForCpuExport(*copy, "forward", parallel, false, imports, error);
  if (second && !object.empty())
    baselineObject =
        mlir::kiln::compileForCpuExport(*second, "forward", parallel, true, baselineImports, error);
  PyEval_RestoreThread(saved);
  if (object.empty() || (second && baselineObject.empty()))
    r.error = "compiling the exported code failed: " + error;
  else if (second && baselineImports != imports)
    r.error = "the baseline build imports other run-time functions than the host build";
  r.object = std::move(object);
  r.baselineObject = std::move(baselineObject);
  r.imports = std::move(imports);
}

void recordExportRun(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                     const std::vector<PyRef> &results) {
  ExportRecord &r = record();
  if (!r.active || r.entry != &entry || r.ran)
    return;
  r.ran = true;
  nb::list in, out;
  for (PyObject *t : inputs)
    in.append(nb::borrow(t));
  for (const PyRef &t : results)
    out.append(nb::borrow(t.get()));
  r.inputs = nb::tuple(in);
  r.results = nb::tuple(out);
}

void registerExportBindings(nb::module_ &m) {
  m.def(
      "export_begin",
      [](bool baseline) {
        ExportRecord &r = record();
        if (r.active)
          throw nb::value_error("kiln.export: an export is already recording");
        r = ExportRecord();
        r.active = true;
        r.baseline = baseline;
      },
      nb::arg("baseline") = false,
      "Starts recording the next compilation for kiln.export (baseline: also compile for the "
      "architecture's baseline CPU).");
  m.def(
      "export_end",
      [] {
        ExportRecord &r = record();
        nb::dict d = r.info;
        d["error"] = r.entry ? r.error
                             : std::string("no graph was compiled (was the model "
                                           "already compiled, or did it run eagerly?)");
        d["entry"] = mlir::kiln::packedName("forward");
        d["ir"] = r.ir;
        d["host"] = mlir::kiln::hostCpuIdentity();
        d["build"] = mlir::kiln::kilnBuildIdentity();
        d["object"] = nb::bytes(r.object.data(), r.object.size());
        d["baseline_object"] = nb::bytes(r.baselineObject.data(), r.baselineObject.size());
        nb::list imports;
        for (const std::string &i : r.imports)
          imports.append(i);
        d["imports"] = imports;
        d["graph_inputs"] = r.ran ? nb::object(r.inputs) : nb::none();
        d["graph_results"] = r.ran ? nb::object(r.results) : nb::none();
        r = ExportRecord();
        return d;
      },
      "Stops recording; the recorded graph as a dict (error, entry, ir, host, build, object, "
      "baseline_object, imports, inputs, results, symbols, graph_inputs, graph_results).");
}

} // namespace kiln
