//===- ProgramCompile.cpp - compiling a graph split at fallback calls -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements ProgramCompile.h. A segment's sub-entry has no sources or
// outputs: its inputs are numbered 0..n-1 and carry a tensor guard only so
// that runGraph's call plan knows their sizes (guards of a segment are
// never checked; the whole frame's guards are the entry's).
//===----------------------------------------------------------------------===//
#include "ProgramCompile.h"

#include "CudaEntry.h"
#include "hook/FrontendState.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/raw_ostream.h"

#include <set>
#include <thread>

namespace kiln {

rt::CompiledFunction compileForCpuWithoutGil(mlir::ModuleOp module,
                                             const mlir::kiln::CpuCompileOptions &options,
                                             std::string &error, mlir::kiln::CpuCompileInfo *info) {
  rt::CompiledFunction fn;
  Py_BEGIN_ALLOW_THREADS fn = mlir::kiln::compileForCpu(module, "forward", options, error, info);
  Py_END_ALLOW_THREADS return fn;
}

void compileForCpuPair(CpuCompileJob &first, CpuCompileJob &second) {
  auto compile = [](CpuCompileJob &job, mlir::ModuleOp module) {
    job.fn = mlir::kiln::compileForCpu(module, "forward", job.options, job.error, &job.info);
  };
  // The copy, through MLIR bytecode (a module cannot move between contexts).
  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  mlir::OwningOpRef<mlir::ModuleOp> copy;
  if (mlir::succeeded(mlir::writeBytecodeToFile(second.module, os)))
    copy = mlir::parseSourceString<mlir::ModuleOp>(bytes, mlir::ParserConfig(context.get()));
  Py_BEGIN_ALLOW_THREADS;
  if (copy) {
    std::thread other(compile, std::ref(second), *copy);
    compile(first, first.module);
    other.join();
  } else { // not expected; one after the other then
    compile(first, first.module);
    compile(second, second.module);
  }
  Py_END_ALLOW_THREADS;
}

namespace {

/// Fills each fallback call's resultUsed: a result is used when a later
/// step reads its slot or the entry returns it.
void markUsedResults(Program &program) {
  std::set<int> read(program.resultSlots.begin(), program.resultSlots.end());
  for (auto step = program.steps.rbegin(); step != program.steps.rend(); ++step) {
    if (step->kind == ProgramStep::Kind::Fallback) {
      step->call.resultUsed.clear();
      for (int slot : step->out)
        step->call.resultUsed.push_back(read.count(slot) > 0);
    }
    read.insert(step->in.begin(), step->in.end());
  }
}

} // namespace

bool compileProgram(Capture &cap, Entry &entry, int device,
                    const mlir::kiln::CpuCompileOptions &options,
                    const std::function<void(const mlir::kiln::CpuCompileInfo &)> &onCpuCompile,
                    std::string &error) {
  auto program = std::make_shared<Program>();
  program->numValues = cap.numValues;
  program->resultSlots = cap.resultSlots;
  int numInputs = (int)cap.inputs.size();
  for (const GraphInput &in : cap.inputs)
    program->inputOrders.push_back(in.memoryOrder);
  std::set<int> fromTorch; // slots a fallback call produced (maybe strided)
  int segment = 0;
  for (CaptureStep &cs : cap.steps) {
    ProgramStep step;
    step.in = cs.in;
    step.out = cs.out;
    if (cs.fallback >= 0) {
      step.kind = ProgramStep::Kind::Fallback;
      step.call = cap.fallbacks[cs.fallback];
      fromTorch.insert(cs.out.begin(), cs.out.end());
      program->steps.push_back(std::move(step));
      continue;
    }
    auto sub = std::make_shared<Entry>();
    sub->name = entry.name + " segment " + std::to_string(segment);
    sub->defaultDtype = cap.defaultDtype;
    for (size_t k = 0; k < cs.in.size(); ++k) {
      int slot = cs.in[k];
      step.contiguous.push_back(fromTorch.count(slot) ||
                                (slot < numInputs && cap.inputs[slot].makeContiguous));
      sub->inputs.push_back({(int)k});
      Guard g{Guard::Kind::Tensor, (int)k};
      g.sizes = cs.inSizes[k];
      g.device = device;
      sub->guards.push_back(std::move(g));
    }
    sub->results = cs.results;
    if (device != TensorMeta::kCpuDevice) {
      std::string text;
      llvm::raw_string_ostream os(text);
      cs.module->print(os);
      if (!compileForCuda(text, device, *sub, error))
        return false;
    } else {
      mlir::kiln::CpuCompileOptions copts = options;
      if (!copts.debugDir.empty())
        copts.debugDir += "/segment-" + std::to_string(segment);
      mlir::kiln::CpuCompileInfo info;
      sub->fn = compileForCpuWithoutGil(*cs.module, copts, error, &info);
      onCpuCompile(info);
      if (!sub->fn.entry) {
        error = "compilation of " + sub->name + " failed: " + error;
        return false;
      }
    }
    ++segment;
    step.graph = std::move(sub);
    program->steps.push_back(std::move(step));
  }
  markUsedResults(*program);
  entry.program = std::move(program);
  return true;
}

} // namespace kiln
