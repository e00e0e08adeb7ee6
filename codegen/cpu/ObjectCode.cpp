//===- ObjectCode.cpp - LLVM IR → host object file → ORC ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// See ObjectCode.h. Objects are linked with RuntimeDyld into
// SectionMemoryManager memory (the same object layer mlir::ExecutionEngine
// uses), one LLJIT per compiled graph, with no platform runtime: kiln's
// generated code has no static initializers or TLS.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/ObjectCode.h"
#include "codegen/cpu/LoopNests.h"
#include "codegen/cpu/VectorMath.h"

#include "llvm/Analysis/TargetLibraryInfo.h"

#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

namespace mlir::kiln {
namespace {

using llvm::orc::JITTargetMachineBuilder;

/// Functions above this many LLVM instructions get their loop nests
/// outlined, and equal nests merged, before O3 (LoopNests.h): every
/// model-sized graph. mobilenet_v2's training step (64 px) compiled in 31 s
/// before, 12 s after; resnet50 (224 px) 2.5 → 1.8 s; all as fast at run
/// time (docs/performance.md, "Compile time: loop nests outlined").
constexpr unsigned kOutlineAbove = 2000;

llvm::Expected<JITTargetMachineBuilder> hostBuilder() {
  auto builder = JITTargetMachineBuilder::detectHost();
  if (builder)
    builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return builder;
}

/// State of the dl_iterate_phdr walk that finds the loaded ELF object
/// containing `address` and its NT_GNU_BUILD_ID note.
struct BuildIdSearch {
  uintptr_t address = 0;
  bool found = false;
  std::string buildId;
};

/// Hex of the GNU build-id note in one PT_NOTE segment, or "".
std::string buildIdInNotes(const char *begin, size_t size) {
  const char *p = begin, *end = begin + size;
  auto align4 = [](size_t n) { return (n + 3) & ~size_t(3); };
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(p);
    const char *name = p + sizeof(ElfW(Nhdr));
    const char *desc = name + align4(note->n_namesz);
    if (desc + note->n_descsz > end)
      break;
    if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
        std::string_view(name, 4) == std::string_view("GNU\0", 4)) {
      std::string hex;
      for (size_t i = 0; i < note->n_descsz; ++i)
        hex += llvm::formatv("{0:x-2}", static_cast<unsigned char>(desc[i])).str();
      return hex;
    }
    p = desc + align4(note->n_descsz);
  }
  return "";
}

int findBuildId(struct dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    contains =
        ph.p_type == PT_LOAD && search->address >= start && search->address < start + ph.p_memsz;
  }
  if (!contains)
    return 0;
  search->found = true;
  for (int i = 0; i < info->dlpi_phnum && search->buildId.empty(); ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_NOTE)
      search->buildId =
          buildIdInNotes(reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr), ph.p_memsz);
  }
  return 1;
}

/// LLVM's O3 module pipeline for `tm` (unrolling, interleaving, loop and
/// SLP vectorization on), with glibc's vector math functions known to the
/// vectorizer (VectorMath.h).
void optimizeAtO3(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&tm, tuning);
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::TargetLibraryInfoImpl libraryInfo(tm.getTargetTriple());
  addVectorMathFunctions(libraryInfo, tm);
  // Registered first, so registerFunctionAnalyses keeps this one.
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine(bool pic, bool baseline) {
  auto builder = hostBuilder();
  if (!builder)
    return builder.takeError();
  if (pic)
    builder->setRelocationModel(llvm::Reloc::PIC_);
  if (baseline) {
    builder->setCPU(builder->getTargetTriple().isX86() ? "x86-64" : "generic");
    builder->getFeatures() = llvm::SubtargetFeatures();
  }
  return builder->createTargetMachine();
}

const std::string &hostCpuIdentity() {
  static const std::string identity = [] {
    auto builder = hostBuilder();
    if (!builder) {
      llvm::consumeError(builder.takeError());
      return std::string("unknown-host");
    }
    return builder->getTargetTriple().str() + " " + builder->getCPU() + " " +
           builder->getFeatures().getString();
  }();
  return identity;
}

const std::string &kilnBuildIdentity() {
  static const std::string identity = [] {
    BuildIdSearch search;
    search.address = reinterpret_cast<uintptr_t>(&findBuildId);
    dl_iterate_phdr(findBuildId, &search);
    if (!search.buildId.empty())
      return "build-id " + search.buildId;
    // No build-id note: the file's path, size and modification time.
    Dl_info info;
    struct stat st;
    if (dladdr(reinterpret_cast<void *>(&findBuildId), &info) && info.dli_fname &&
        ::stat(info.dli_fname, &st) == 0)
      return llvm::formatv("file {0} {1} {2}.{3}", info.dli_fname, st.st_size, st.st_mtim.tv_sec,
                           st.st_mtim.tv_nsec)
          .str();
    return std::string("unknown-build");
  }();
  return identity;
}

void addPackedWrapper(llvm::Function &fn, llvm::StringRef name) {
  llvm::Module &module = *fn.getParent();
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *wrapper = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::Value *args = wrapper->getArg(0);
  auto slot = [&](unsigned i) {
    return b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, args, i));
  };
  llvm::SmallVector<llvm::Value *> callArgs;
  for (llvm::Argument &param : fn.args())
    callArgs.push_back(b.CreateLoad(param.getType(), slot(param.getArgNo())));
  llvm::Value *result = b.CreateCall(&fn, callArgs);
  if (!fn.getReturnType()->isVoidTy())
    b.CreateStore(result, slot(fn.arg_size()));
  b.CreateRetVoid();
}

llvm::Expected<std::string>
compileToObject(llvm::Module &module, llvm::TargetMachine &tm, const std::string &optimizedIRPath,
                const std::function<llvm::Error(llvm::Module &)> &beforeEmit) {
  module.setDataLayout(tm.createDataLayout());
  module.setTargetTriple(tm.getTargetTriple().str());
  // Intel cores with AVX-512 default to 256-bit vectors; kiln's loops are
  // long and throughput-bound, where full width wins (no-op elsewhere).
  for (llvm::Function &f : module)
    if (!f.isDeclaration())
      f.addFnAttr("prefer-vector-width", "512");
  keepOuterLoopsRolled(module);
  outlineLoopNests(module, kOutlineAbove);
  optimizeAtO3(module, tm);
  if (!optimizedIRPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(optimizedIRPath, ec);
    if (!ec)
      module.print(out, nullptr);
  }
  if (beforeEmit)
    if (llvm::Error err = beforeEmit(module))
      return std::move(err);

  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the host target cannot emit object files");
  pm.run(module);
  return std::string(buffer.begin(), buffer.end());
}

/// validateObject's checks on the parsed ELF file `elf` (ET_*/SHT_* come from
/// <elf.h>, which <link.h> includes as macros).
template <typename ELFT> llvm::Error validateElf(const llvm::object::ELFFile<ELFT> &elf) {
  if (elf.getHeader().e_type != ET_REL)
    return llvm::createStringError("not a relocatable object");
  auto sections = elf.sections();
  if (!sections)
    return sections.takeError();
  for (const auto &sec : *sections) {
    if (auto name = elf.getSectionName(sec); !name)
      return name.takeError();
    if (sec.sh_type != SHT_NOBITS)
      if (auto contents = elf.getSectionContents(sec); !contents)
        return contents.takeError();
  }
  for (const auto &sec : *sections) {
    if (sec.sh_type != SHT_RELA && sec.sh_type != SHT_REL)
      continue;
    auto symtab = elf.getSection(sec.sh_link);
    if (!symtab)
      return symtab.takeError();
    auto symbols = elf.symbols(*symtab);
    if (!symbols)
      return symbols.takeError();
    auto target = elf.getSection(sec.sh_info);
    if (!target)
      return target.takeError();
    auto check = [&](uint32_t symbol, uint64_t offset) -> llvm::Error {
      if (symbol >= symbols->size())
        return llvm::createStringError("relocation names symbol " + std::to_string(symbol) +
                                       " of " + std::to_string(symbols->size()));
      if (offset + 8 > (*target)->sh_size)
        return llvm::createStringError("relocation offset outside its section");
      return llvm::Error::success();
    };
    if (sec.sh_type == SHT_RELA) {
      auto relas = elf.relas(sec);
      if (!relas)
        return relas.takeError();
      for (const auto &r : *relas)
        if (llvm::Error err = check(r.getSymbol(false), r.r_offset))
          return err;
    } else {
      auto rels = elf.rels(sec);
      if (!rels)
        return rels.takeError();
      for (const auto &r : *rels)
        if (llvm::Error err = check(r.getSymbol(false), r.r_offset))
          return err;
    }
  }
  return llvm::Error::success();
}

llvm::Error validateObject(llvm::StringRef object) {
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "entry"));
  if (!file)
    return file.takeError();
  llvm::Triple host(llvm::sys::getProcessTriple());
  if ((*file)->getArch() != host.getArch())
    return llvm::createStringError("object for another machine");
  // The host is little-endian 64-bit ELF (x86-64, AArch64): anything else is refused.
  auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(file->get());
  if (!elf)
    return llvm::createStringError("not a 64-bit little-endian ELF object");
  if (llvm::Error err = validateElf(elf->getELFFile()))
    return err;
  for (const llvm::object::SymbolRef &sym : elf->symbols()) {
    if (auto name = sym.getName(); !name)
      return name.takeError();
    if (auto section = sym.getSection(); !section)
      return section.takeError();
    if (auto address = sym.getAddress(); !address)
      return address.takeError();
    if (auto type = sym.getType(); !type)
      return type.takeError();
  }
  return llvm::Error::success();
}

llvm::Expected<::kiln::rt::CompiledFunction>
loadObject(llvm::StringRef object, llvm::StringRef entry,
           const std::vector<std::pair<const char *, void *>> &symbols, bool perfJitdump) {
  auto builder = hostBuilder();
  if (!builder)
    return builder.takeError();
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*builder))
                 .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                 .setObjectLinkingLayerCreator(
                     [perfJitdump](llvm::orc::ExecutionSession &session, const llvm::Triple &) {
                       auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                           session, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
                       if (perfJitdump)
                         if (llvm::JITEventListener *listener =
                                 llvm::JITEventListener::createPerfJITEventListener())
                           layer->registerJITEventListener(*listener);
                       return layer;
                     })
                 .create();
  if (!jit)
    return jit.takeError();
  llvm::orc::JITDylib &main = (*jit)->getMainJITDylib();
  llvm::orc::SymbolMap map;
  for (auto [name, address] : symbols)
    map[(*jit)->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                          llvm::JITSymbolFlags::Exported};
  if (llvm::Error err = main.define(llvm::orc::absoluteSymbols(std::move(map))))
    return std::move(err);
  if (llvm::Error err = addVectorMathSymbols(main))
    return std::move(err);
  if (llvm::Error err =
          (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, "kiln-graph.o")))
    return std::move(err);
  auto address = (*jit)->lookup(entry);
  if (!address)
    return address.takeError();

  ::kiln::rt::CompiledFunction compiled;
  compiled.entry = address->toPtr<::kiln::rt::CompiledFunction::PackedFn>();
  compiled.owner = std::shared_ptr<llvm::orc::LLJIT>(std::move(*jit));
  return compiled;
}

} // namespace mlir::kiln
