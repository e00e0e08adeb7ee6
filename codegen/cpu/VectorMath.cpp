//===- VectorMath.cpp - glibc's vector math library for the loop vectorizer -===//
// SPDX-License-Identifier: Apache-2.0
//
// See VectorMath.h.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/VectorMath.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/Target/TargetMachine.h"

#include <deque>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace mlir::kiln {
namespace {

constexpr const char *kLibrary = "libmvec.so.1";

/// One function's vector forms: glibc's names are
/// `_ZGV<isa>N<lanes><v per argument>_<name>` (isa b = SSE, d = AVX2, e =
/// AVX-512), the same for its intrinsic.
struct VectorForms {
  const char *scalar;    // the libm name
  const char *intrinsic; // the LLVM intrinsic, or null
  bool f64;
  unsigned arguments = 1;
};

/// f32 sin/cos/tan/atan/atan2 (not approximated: ApproximateMath.cpp) and
/// pow, and the f64 functions that would otherwise be scalar libm calls
/// (f64 is never approximated); f32 exp/log/tanh/erf keep MLIR's polynomials.
constexpr VectorForms kFunctions[] = {
    {"sinf", "llvm.sin.f32", false},   {"cosf", "llvm.cos.f32", false},
    {"tanf", "llvm.tan.f32", false},   {"powf", "llvm.pow.f32", false, 2},
    {"atanf", nullptr, false},         {"atan2f", nullptr, false, 2},
    {"sin", "llvm.sin.f64", true},     {"cos", "llvm.cos.f64", true},
    {"tan", "llvm.tan.f64", true},     {"pow", "llvm.pow.f64", true, 2},
    {"exp", "llvm.exp.f64", true},     {"exp2", "llvm.exp2.f64", true},
    {"log", "llvm.log.f64", true},     {"log2", "llvm.log2.f64", true},
    {"log10", "llvm.log10.f64", true}, {"expm1", nullptr, true},
    {"log1p", nullptr, true},          {"sinh", nullptr, true},
    {"cosh", nullptr, true},           {"tanh", nullptr, true},
    {"atan", nullptr, true},           {"atan2", nullptr, true, 2},
};

bool hasFeature(const llvm::TargetMachine &tm, llvm::StringRef feature) {
  llvm::SmallVector<llvm::StringRef> features;
  llvm::SplitString(tm.getTargetFeatureString(), features, ",");
  return llvm::is_contained(features, ("+" + feature).str());
}

void *library() {
  static void *handle = dlopen(kLibrary, RTLD_LAZY | RTLD_LOCAL);
  return handle;
}

/// Every vector form the loaded libmvec has (tan, atan, sinh... came in
/// glibc 2.35), by ISA letter (b = SSE, d = AVX2, e = AVX-512): built once,
/// as VecDesc holds StringRefs.
const std::vector<std::pair<char, llvm::VecDesc>> &allVectorForms() {
  static const auto *forms = [] {
    static std::deque<std::string> names;
    auto keep = [](std::string s) -> llvm::StringRef { return names.emplace_back(std::move(s)); };
    auto *all = new std::vector<std::pair<char, llvm::VecDesc>>;
    for (auto [isa, bytes] : {std::pair{'b', 16u}, {'d', 32u}, {'e', 64u}})
      for (const VectorForms &f : kFunctions) {
        unsigned lanes = bytes / (f.f64 ? 8 : 4);
        std::string params(f.arguments, 'v');
        llvm::StringRef vector =
            keep(llvm::formatv("_ZGV{0}N{1}{2}_{3}", isa, lanes, params, f.scalar));
        if (!dlsym(library(), vector.data()))
          continue;
        llvm::StringRef abi = keep(llvm::formatv("_ZGV_LLVM_N{0}{1}", lanes, params));
        auto count = llvm::ElementCount::getFixed(lanes);
        for (const char *scalar : {f.scalar, f.intrinsic})
          if (scalar)
            all->push_back({isa, llvm::VecDesc(scalar, vector, count, /*Masked=*/false, abi)});
      }
    return all;
  }();
  return *forms;
}

} // namespace

bool vectorMathAvailable() { return library() != nullptr; }

void addVectorMathFunctions(llvm::TargetLibraryInfoImpl &tli, const llvm::TargetMachine &tm) {
  const llvm::Triple &triple = tm.getTargetTriple();
  if (!triple.isX86() || !triple.isArch64Bit() || !vectorMathAvailable())
    return;
  // Only the widths `tm` passes in one register: a wider form's argument
  // would be split across registers, which is not glibc's calling convention.
  std::string isas = "b";
  if (hasFeature(tm, "avx2"))
    isas += 'd';
  if (hasFeature(tm, "avx512f"))
    isas += 'e';
  std::vector<llvm::VecDesc> forms;
  for (const auto &[isa, form] : allVectorForms())
    if (isas.find(isa) != std::string::npos)
      forms.push_back(form);
  tli.addVectorizableFunctions(forms);
}

llvm::Error addVectorMathSymbols(llvm::orc::JITDylib &dylib) {
  if (!vectorMathAvailable())
    return llvm::Error::success();
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::Load(
      kLibrary, /*GlobalPrefix=*/'\0',
      [](const llvm::orc::SymbolStringPtr &name) { return (*name).starts_with("_ZGV"); });
  if (!generator)
    return generator.takeError();
  dylib.addGenerator(std::move(*generator));
  return llvm::Error::success();
}

} // namespace mlir::kiln
