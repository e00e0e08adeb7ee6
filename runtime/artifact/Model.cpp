//===- Model.cpp - a loaded artifact, ready to run -----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Model.h: loading the code section (Code.cpp would be one more
// file for three functions; they live here), checking a call's tensors
// against the plan and calling the compiled entry with memref descriptors
// (runtime/MemRefDescriptor.h's layout: allocated, aligned, offset, sizes,
// strides).
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Model.h"

#include "runtime/artifact/Imports.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln::rt::artifact {
namespace {

Error fail(kiln_status code, std::string message) { return Error{code, std::move(message)}; }

/// Checks the code section is a 64-bit little-endian ELF shared library for
/// this machine whose headers lie inside it (dlopen reads them next).
Error checkElf(std::string_view code) {
  Elf64_Ehdr h;
  if (code.size() < sizeof(h))
    return fail(KILN_ERROR_FORMAT, "the code section is too small for an ELF header");
  std::memcpy(&h, code.data(), sizeof(h));
#if defined(__x86_64__)
  const uint16_t machine = EM_X86_64;
#elif defined(__aarch64__)
  const uint16_t machine = EM_AARCH64;
#else
  const uint16_t machine = EM_NONE;
#endif
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
      h.e_ident[EI_DATA] != ELFDATA2LSB || h.e_type != ET_DYN)
    return fail(KILN_ERROR_FORMAT, "the code section is not a 64-bit little-endian ELF library");
  if (h.e_machine != machine)
    return fail(KILN_ERROR_UNSUPPORTED, "the code was compiled for another processor (ELF "
                                        "machine " +
                                            std::to_string(h.e_machine) + ")");
  if (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phoff > code.size() ||
      (uint64_t)h.e_phnum * sizeof(Elf64_Phdr) > code.size() - h.e_phoff)
    return fail(KILN_ERROR_FORMAT, "the code section's program headers lie outside it");
  for (unsigned i = 0; i < h.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, code.data() + h.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_offset > code.size() || ph.p_filesz > code.size() - ph.p_offset)
      return fail(KILN_ERROR_FORMAT, "a segment of the code section lies outside it");
  }
  return {};
}

/// A file descriptor holding `bytes`: an anonymous memory file (`memfd`),
/// or (without it, or where memory files may not be executed) an unlinked
/// temporary file. -1 on failure.
int codeFile(std::string_view bytes, bool memfd, std::string &why) {
  int fd = memfd ? memfd_create("kiln-model", MFD_CLOEXEC) : -1;
  if (fd < 0) {
    std::string path = std::string(P_tmpdir) + "/kiln-model-XXXXXX";
    fd = mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0)
      unlink(path.c_str());
  }
  if (fd < 0) {
    why = std::string("no memory file or temporary file: ") + std::strerror(errno);
    return -1;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      why = std::string("writing the code: ") + std::strerror(errno);
      close(fd);
      return -1;
    }
    done += (size_t)n;
  }
  return fd;
}

std::vector<int64_t> specDims(const TensorSpec &t) {
  std::vector<int64_t> dims;
  for (const Dim &d : t.dims)
    dims.push_back(d.symbol >= 0 ? -1 : d.size);
  return dims;
}

} // namespace

Model::~Model() {
  if (library_)
    dlclose(library_);
  if (codeFd_ >= 0)
    close(codeFd_);
}

std::unique_ptr<Model> Model::load(const std::string &path, const std::string &device,
                                   Error &error) {
  int gpu = -1;
  if (device != "cpu" && device != "cpu-baseline" && !parseCudaDevice(device, gpu)) {
    error = fail(KILN_ERROR_UNSUPPORTED, "device '" + device +
                                             "': this runtime runs artifacts on 'cpu', "
                                             "'cpu-baseline' (the portable build) or 'cuda[:N]'");
    return nullptr;
  }
  std::unique_ptr<Model> m(new Model());
  m->artifact_ = Artifact::open(path, error);
  if (!m->artifact_)
    return nullptr;
  const Artifact &a = *m->artifact_;
  if (gpu >= 0 || a.code().empty()) {
    if (gpu >= 0)
      m->cuda_ = CudaModel::load(a, gpu, error);
    else
      error = fail(KILN_ERROR_UNSUPPORTED, "the artifact has no CPU build (exported for CUDA "
                                           "only); load it on 'cuda'");
    if (!m->cuda_) {
      error.message = path + ": " + error.message;
      return nullptr;
    }
    m->describe();
    return m;
  }
  bool baseline = device == "cpu-baseline" || !a.missingFeature().empty();
  if (baseline && a.baselineCode().empty()) {
    error = fail(KILN_ERROR_UNSUPPORTED,
                 path + ": " +
                     (device == "cpu-baseline"
                          ? std::string("the artifact has no baseline build")
                          : "the code was compiled for a CPU with " + a.missingFeature() +
                                ", which this CPU lacks, and the artifact has no baseline build"));
    return nullptr;
  }
  m->baseline_ = baseline;
  if ((error = m->loadCode())) {
    error.message = path + ": " + error.message;
    return nullptr;
  }
  m->describe();
  return m;
}

void Model::describe() {
  const Plan &p = plan();
  for (int g : p.userInputs)
    inputDims_.push_back(specDims(p.inputs[g]));
  for (int r : p.outputs)
    outputDims_.push_back(specDims(p.results[r]));
}

Error Model::loadCode() {
  std::string_view code = baseline_ ? artifact_->baselineCode() : artifact_->code();
  if (Error err = checkElf(code))
    return err;
  std::string why, dlError;
  // A memory file first; a temporary file where that fails (e.g. a kernel
  // with vm.memfd_noexec set refuses to map memory files executable).
  for (bool memfd : {true, false}) {
    int fd = codeFile(code, memfd, why);
    if (fd < 0)
      continue;
    // The descriptor stays open while the library is loaded: glibc reuses an
    // already loaded library of the same path name, and a closed descriptor's
    // number (hence "/proc/self/fd/N") would come back for the next model.
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_) {
      codeFd_ = fd;
      break;
    }
    const char *e = dlerror();
    dlError = e ? e : "dlopen failed";
    close(fd);
  }
  if (!library_)
    return fail(KILN_ERROR_CODE, "cannot load the code: " + (dlError.empty() ? why : dlError));
  const Plan &p = plan();
  entry_ = reinterpret_cast<void (*)(void **)>(dlsym(library_, p.entry.c_str()));
  void *table = dlsym(library_, "__kiln_imports");
  void *symEntry = nullptr;
  Dl_info info;
  bool found = entry_ && table && dladdr1(table, &info, &symEntry, RTLD_DL_SYMENT) && symEntry;
  const auto *sym = static_cast<const ElfW(Sym) *>(symEntry);
  if (!found || sym->st_size != sizeof(void *) * std::max<size_t>(p.imports.size(), 1))
    return fail(KILN_ERROR_CODE, "the code lacks its entry " + p.entry + " or an import table of " +
                                     std::to_string(p.imports.size()) + " entries");
  auto **slots = static_cast<void **>(table);
  for (size_t i = 0; i < p.imports.size(); ++i) {
    slots[i] = findCpuRuntimeImport(p.imports[i].c_str());
    if (!slots[i])
      return fail(KILN_ERROR_CODE, "the code calls " + p.imports[i] +
                                       ", which this runtime does not provide (a newer kiln "
                                       "exported it)");
  }
  return {};
}

const TensorSpec &Model::inputSpec(size_t k) const { return plan().inputs[plan().userInputs[k]]; }
const TensorSpec &Model::outputSpec(size_t k) const { return plan().results[plan().outputs[k]]; }

namespace {

/// "input 1 ('x')": how errors name a caller input.
std::string inputName(size_t k, const TensorSpec &s) {
  return "input " + std::to_string(k) + " ('" + s.name + "')";
}

/// The plan's name of a DLPack dtype ("f64"), or its code and bits.
std::string dlpackName(kiln_dtype d) {
  for (int i = 0; i <= (int)DType::Bool; ++i) {
    uint8_t code, bits;
    dtypeToDLPack((DType)i, code, bits);
    if (d.code == code && d.bits == bits && d.lanes == 1)
      return dtypeName((DType)i);
  }
  return "(code " + std::to_string(d.code) + ", " + std::to_string(d.bits) + " bits, " +
         std::to_string(d.lanes) + " lanes)";
}

/// Checks a tensor's device (the host's, or `gpu`: a CUDA model's
/// device, -1 for a CPU model), dtype, rank, data pointer and contiguity.
Error checkTensor(const kiln_tensor &t, const TensorSpec &s, const std::string &name, int gpu) {
  bool onGpu = gpu >= 0 && t.device.device_type == KILN_DEVICE_CUDA;
  if (t.device.device_type != KILN_DEVICE_CPU && !onGpu)
    return fail(KILN_ERROR_DEVICE, name + " is on device type " +
                                       std::to_string(t.device.device_type) +
                                       (gpu < 0 ? "; the model runs on the CPU (device type 1)"
                                                : "; the model takes CPU or CUDA tensors"));
  if (onGpu && t.device.device_id != gpu)
    return fail(KILN_ERROR_DEVICE, name + " is on cuda:" + std::to_string(t.device.device_id) +
                                       "; the model is loaded on cuda:" + std::to_string(gpu));
  uint8_t code, bits;
  dtypeToDLPack(s.dtype, code, bits);
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return fail(KILN_ERROR_DTYPE, name + ": dtype " + dlpackName(t.dtype) +
                                      " but the model takes " + dtypeName(s.dtype));
  if (t.ndim != (int32_t)s.dims.size())
    return fail(KILN_ERROR_SHAPE, name + ": " + std::to_string(t.ndim) +
                                      " dims but the model takes " + std::to_string(s.dims.size()));
  if (t.ndim > 0 && !t.shape)
    return fail(KILN_ERROR_INVALID_ARGUMENT, name + ": null shape");
  int64_t expect = 1, numel = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 0)
      return fail(KILN_ERROR_SHAPE, name + " dim " + std::to_string(d) + ": negative size");
    if (t.strides && t.shape[d] > 1 && t.strides[d] != expect)
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  name + " is not contiguous (dim " + std::to_string(d) + " has stride " +
                      std::to_string(t.strides[d]) + ", expected " + std::to_string(expect) + ")");
    expect *= t.shape[d];
    numel *= t.shape[d];
  }
  if (!t.data && numel > 0)
    return fail(KILN_ERROR_INVALID_ARGUMENT, name + ": null data pointer");
  return {};
}

} // namespace

Error Model::bindInputs(const kiln_tensor *inputs, size_t n, std::vector<int64_t> &symbols) const {
  const Plan &p = plan();
  if (n != p.userInputs.size() || (n && !inputs))
    return fail(KILN_ERROR_INVALID_ARGUMENT, "the model takes " +
                                                 std::to_string(p.userInputs.size()) +
                                                 " inputs, got " + std::to_string(n));
  symbols.assign(p.symbols.size(), -1);
  std::vector<std::string> boundBy(p.symbols.size());
  for (size_t k = 0; k < n; ++k) {
    const TensorSpec &s = inputSpec(k);
    std::string name = inputName(k, s);
    if (Error err = checkTensor(inputs[k], s, name, cuda_ ? cuda_->device() : -1))
      return err;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      int64_t v = inputs[k].shape[d];
      std::string where = name + " dim " + std::to_string(d);
      const Dim &dim = s.dims[d];
      if (dim.symbol < 0) {
        if (v != dim.size)
          return fail(KILN_ERROR_SHAPE, where + ": size " + std::to_string(v) +
                                            " but the model takes " + std::to_string(dim.size));
        continue;
      }
      const SymbolSpec &sym = p.symbols[dim.symbol];
      if (v < sym.min || v > sym.max)
        return fail(KILN_ERROR_SHAPE, where + " (symbolic '" + sym.name + "'): size " +
                                          std::to_string(v) + " outside its range [" +
                                          std::to_string(sym.min) + ", " + std::to_string(sym.max) +
                                          "]");
      if (symbols[dim.symbol] >= 0 && symbols[dim.symbol] != v)
        return fail(KILN_ERROR_SHAPE, where + " (symbolic '" + sym.name + "'): size " +
                                          std::to_string(v) + " but " + boundBy[dim.symbol] +
                                          " is " + std::to_string(symbols[dim.symbol]));
      symbols[dim.symbol] = v;
      boundBy[dim.symbol] = where;
    }
  }
  return {};
}

std::vector<int64_t> Model::outputShape(size_t k, const std::vector<int64_t> &symbols) const {
  std::vector<int64_t> shape;
  for (const Dim &d : outputSpec(k).dims)
    shape.push_back(d.symbol >= 0 ? symbols[d.symbol] : d.size);
  return shape;
}

namespace {

/// Appends a descriptor of a contiguous tensor at `data` of `spec`'s shape.
void appendDescriptor(std::vector<int64_t> &words, const void *data, const TensorSpec &spec,
                      const std::vector<int64_t> &symbols) {
  int64_t p;
  std::memcpy(&p, &data, sizeof(p));
  words.insert(words.end(), {p, p, 0});
  size_t rank = spec.dims.size(), at = words.size();
  words.resize(at + 2 * rank);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    const Dim &d = spec.dims[i];
    int64_t size = d.symbol >= 0 ? symbols[d.symbol] : d.size;
    words[at + i] = size;
    words[at + rank + i] = stride;
    stride *= std::max<int64_t>(size, 1);
  }
}

int64_t numBytes(const std::vector<int64_t> &shape, DType dtype) {
  int64_t n = dtypeBytes(dtype);
  for (int64_t s : shape)
    n *= s;
  return n;
}

} // namespace

Error Model::checkOutputs(const kiln_tensor *outputs, size_t numOutputs,
                          const std::vector<int64_t> &symbols,
                          std::vector<void *> &resultData) const {
  const Plan &p = plan();
  if (numOutputs != p.outputs.size() || (numOutputs && !outputs))
    return fail(KILN_ERROR_INVALID_ARGUMENT, "the model has " + std::to_string(p.outputs.size()) +
                                                 " outputs, got " + std::to_string(numOutputs));
  for (size_t k = 0; k < numOutputs; ++k) {
    const kiln_tensor &t = outputs[k];
    std::string name = "output " + std::to_string(k) + " ('" + p.outputNames[k] + "')";
    if (Error err = checkTensor(t, outputSpec(k), name, cuda_ ? cuda_->device() : -1))
      return err;
    std::vector<int64_t> shape = outputShape(k, symbols);
    for (size_t d = 0; d < shape.size(); ++d)
      if (t.shape[d] != shape[d])
        return fail(KILN_ERROR_SHAPE, name + " dim " + std::to_string(d) + ": size " +
                                          std::to_string(t.shape[d]) + " but these inputs give " +
                                          std::to_string(shape[d]));
    char *data = static_cast<char *>(t.data) + t.byte_offset;
    if (!resultData[p.outputs[k]])
      resultData[p.outputs[k]] = data;
  }
  return {};
}

Error Model::run(const kiln_tensor *inputs, size_t numInputs, kiln_tensor *outputs,
                 size_t numOutputs, void *stream, bool async) const {
  const Plan &p = plan();
  std::vector<int64_t> symbols;
  if (Error err = bindInputs(inputs, numInputs, symbols))
    return err;
  // Where each graph result goes: the first output returning it, else scratch.
  std::vector<void *> resultData(p.results.size(), nullptr);
  std::vector<std::unique_ptr<char[]>> scratch;
  if (Error err = checkOutputs(outputs, numOutputs, symbols, resultData))
    return err;
  if (cuda_)
    return cuda_->run(inputs, outputs, numOutputs, static_cast<cuda::CUstream>(stream), async);
  std::vector<int64_t> words;
  std::vector<size_t> offsets;
  for (const InputSpec &in : p.inputs) {
    offsets.push_back(words.size());
    const void *data =
        in.weight ? reinterpret_cast<const char *>(artifact_->weights()) + in.offset
                  : static_cast<const char *>(inputs[in.user].data) + inputs[in.user].byte_offset;
    appendDescriptor(words, data, in, symbols);
  }
  for (size_t r = 0; r < p.results.size(); ++r) {
    if (!resultData[r]) {
      std::vector<int64_t> shape;
      for (const Dim &d : p.results[r].dims)
        shape.push_back(d.symbol >= 0 ? symbols[d.symbol] : d.size);
      scratch.emplace_back(new char[std::max<int64_t>(numBytes(shape, p.results[r].dtype), 1)]);
      resultData[r] = scratch.back().get();
    }
    offsets.push_back(words.size());
    appendDescriptor(words, resultData[r], p.results[r], symbols);
  }
  std::vector<void *> descriptors(offsets.size()), args(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    descriptors[i] = words.data() + offsets[i];
    args[i] = &descriptors[i];
  }
  entry_(args.data());
  if (p.indexCheck >= 0) { // the graph's flag for an out-of-range index input
    int64_t bad;
    std::memcpy(&bad, resultData[p.indexCheck], sizeof(bad));
    if (bad)
      return fail(KILN_ERROR_INDEX, "index out of range: an index input (indexing, "
                                    "index_select, gather, embedding or a loss target) was "
                                    "outside the dim it reads; eager raises IndexError");
  }
  // An output returning the same result as an earlier one gets a copy.
  for (size_t k = 0; k < numOutputs; ++k) {
    char *data = static_cast<char *>(outputs[k].data) + outputs[k].byte_offset;
    if (data != resultData[p.outputs[k]])
      std::memcpy(data, resultData[p.outputs[k]],
                  numBytes(outputShape(k, symbols), outputSpec(k).dtype));
  }
  return {};
}

} // namespace kiln::rt::artifact
