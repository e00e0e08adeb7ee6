//===- Artifact.cpp - opening and validating a .kiln file ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Artifact.h. Order of checks: whatever a later check reads was
// bounds-checked by an earlier one (header before table, table CRC before
// the offsets it holds, offsets before contents, contents' CRC before
// parsing them).
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"

#include "runtime/artifact/Format.h"

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt::artifact {
namespace {

template <typename T> T readLE(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T)); // the format and every supported host are little-endian
  return v;
}

Error fail(kiln_status code, std::string message) { return Error{code, std::move(message)}; }

struct SectionEntry {
  uint32_t kind, crc;
  uint64_t offset, size;
};

/// Checks one section's bounds, alignment and CRC.
Error checkSection(const uint8_t *base, uint64_t fileSize, uint64_t tableEnd, const SectionEntry &s,
                   unsigned index) {
  std::string which = "section " + std::to_string(index) + " (kind " + std::to_string(s.kind) + ")";
  if (s.kind < (uint32_t)SectionKind::Meta || s.kind > kLastSectionKind)
    return fail(KILN_ERROR_FORMAT, which + ": unknown kind");
  if (s.offset % kSectionAlign || s.offset < tableEnd || s.offset > fileSize ||
      s.size > fileSize - s.offset)
    return fail(KILN_ERROR_FORMAT, which + ": offset " + std::to_string(s.offset) + " size " +
                                       std::to_string(s.size) + " outside the file (" +
                                       std::to_string(fileSize) + " bytes) or misaligned");
  if (crc32Of(base + s.offset, s.size) != s.crc)
    return fail(KILN_ERROR_CHECKSUM, which + ": checksum mismatch (the file is corrupt)");
  return {};
}

/// The header's checks: size, magic, version, declared file size, flags and
/// reserved bytes, section count. Sets `count`.
Error checkHeader(const uint8_t *base, uint64_t size, uint32_t &count) {
  if (size < kHeaderSize)
    return fail(KILN_ERROR_FORMAT,
                "truncated: " + std::to_string(size) + " bytes, less than the 64-byte header");
  if (std::memcmp(base, kMagic, sizeof(kMagic)) != 0)
    return fail(KILN_ERROR_FORMAT, "not a kiln artifact (bad magic)");
  uint32_t version = readLE<uint32_t>(base + 8);
  if (version != kVersion)
    return fail(KILN_ERROR_VERSION, "artifact format version " + std::to_string(version) +
                                        "; this runtime reads version " + std::to_string(kVersion) +
                                        " (re-export the model)");
  count = readLE<uint32_t>(base + 12);
  uint64_t declared = readLE<uint64_t>(base + 16);
  if (declared != size)
    return fail(KILN_ERROR_FORMAT, "the header says " + std::to_string(declared) +
                                       " bytes but the file has " + std::to_string(size) +
                                       " (truncated or appended to)");
  for (uint64_t i = 28; i < kHeaderSize; ++i)
    if (base[i] != 0)
      return fail(KILN_ERROR_FORMAT, "nonzero flags or reserved header bytes (a newer format?)");
  if (count == 0 || count > kMaxSections)
    return fail(KILN_ERROR_FORMAT, "bad section count " + std::to_string(count));
  return {};
}

} // namespace

Artifact::~Artifact() {
  if (map_)
    munmap(map_, size_);
}

std::unique_ptr<Artifact> Artifact::open(const std::string &path, Error &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fail(KILN_ERROR_IO, path + ": cannot open: " + std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  std::unique_ptr<Artifact> a(new Artifact());
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = fail(KILN_ERROR_IO, path + ": not a regular file");
    return nullptr;
  }
  a->size_ = (uint64_t)st.st_size;
  if (a->size_ > 0) {
    // MAP_POPULATE: every page is read next (checksums), and mapping them in
    // one call costs a fraction of one page fault each.
    void *m = mmap(nullptr, a->size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    a->map_ = m == MAP_FAILED ? nullptr : m;
  }
  ::close(fd);
  if (a->size_ > 0 && !a->map_) {
    error = fail(KILN_ERROR_IO, path + ": cannot map: " + std::strerror(errno));
    return nullptr;
  }
  error = a->validate();
  if (error) {
    error.message = path + ": " + error.message;
    return nullptr;
  }
  return a;
}

Error Artifact::validate() {
  const auto *base = static_cast<const uint8_t *>(map_);
  uint32_t count = 0;
  if (Error err = checkHeader(base, size_, count))
    return err;
  uint64_t tableEnd = kHeaderSize + count * kSectionEntrySize;
  if (tableEnd > size_)
    return fail(KILN_ERROR_FORMAT, "truncated section table");
  uint32_t crc = crc32Update(crc32Of(base, 24), base + kHeaderSize, count * kSectionEntrySize);
  if (crc != readLE<uint32_t>(base + 24))
    return fail(KILN_ERROR_CHECKSUM, "header checksum mismatch (the file is corrupt)");
  const uint8_t *found[kLastSectionKind + 1] = {};
  uint64_t sizes[kLastSectionKind + 1] = {};
  for (unsigned i = 0; i < count; ++i) {
    const uint8_t *e = base + kHeaderSize + i * kSectionEntrySize;
    SectionEntry s{readLE<uint32_t>(e), readLE<uint32_t>(e + 4), readLE<uint64_t>(e + 8),
                   readLE<uint64_t>(e + 16)};
    if (readLE<uint64_t>(e + 24) != 0)
      return fail(KILN_ERROR_FORMAT, "section " + std::to_string(i) + ": nonzero reserved field");
    if (Error err = checkSection(base, size_, tableEnd, s, i))
      return err;
    if (found[s.kind])
      return fail(KILN_ERROR_FORMAT, "two sections of kind " + std::to_string(s.kind));
    found[s.kind] = base + s.offset;
    sizes[s.kind] = s.size;
  }
  const char *names[] = {"", "meta", "plan", "CPU code", "weights"};
  bool cuda = found[(int)SectionKind::CudaPlan] || found[(int)SectionKind::CudaImages];
  for (unsigned k = 1; k <= 4; ++k)
    if (!found[k] && !(k == (unsigned)SectionKind::CpuCode && cuda))
      return fail(KILN_ERROR_FORMAT, std::string("no ") + names[k] + " section");
  if (cuda && !(found[(int)SectionKind::CudaPlan] && found[(int)SectionKind::CudaImages]))
    return fail(KILN_ERROR_FORMAT, "a CUDA plan without CUDA images or the reverse");
  meta_ = std::string_view(reinterpret_cast<const char *>(found[1]), sizes[1]);
  if (found[3])
    code_ = std::string_view(reinterpret_cast<const char *>(found[3]), sizes[3]);
  if (found[6])
    baselineCode_ = std::string_view(reinterpret_cast<const char *>(found[6]), sizes[6]);
  weights_ = found[4];
  weightsSize_ = sizes[4];
  std::string why;
  std::string_view planText(reinterpret_cast<const char *>(found[2]), sizes[2]);
  if (!parsePlan(planText, weightsSize_, plan_, why))
    return fail(KILN_ERROR_FORMAT, why);
  if (cuda) {
    auto text = [&](SectionKind k) {
      return std::string_view(reinterpret_cast<const char *>(found[(int)k]), sizes[(int)k]);
    };
    if (!parseCudaSection(text(SectionKind::CudaPlan), text(SectionKind::CudaImages), plan_, cuda_,
                          why))
      return fail(KILN_ERROR_FORMAT, why);
    hasCuda_ = true;
  }
  missingFeature_ = missingCpuFeature(metaValue("cpu-features"));
  return {};
}

std::string Artifact::metaValue(std::string_view key) const {
  size_t pos = 0;
  while (pos < meta_.size()) {
    size_t end = meta_.find('\n', pos);
    std::string_view line = meta_.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? meta_.size() : end + 1;
    if (line.size() > key.size() + 1 && line.substr(0, key.size()) == key &&
        line[key.size()] == ':')
      return std::string(line.substr(key.size() + 1 + (line[key.size() + 1] == ' ')));
  }
  return "";
}

std::string missingCpuFeature(std::string_view features) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  struct Known {
    const char *name;
    bool has;
  };
  const Known known[] = {
      {"sse4.2", (bool)__builtin_cpu_supports("sse4.2")},
      {"avx", (bool)__builtin_cpu_supports("avx")},
      {"avx2", (bool)__builtin_cpu_supports("avx2")},
      {"fma", (bool)__builtin_cpu_supports("fma")},
      {"bmi2", (bool)__builtin_cpu_supports("bmi2")},
      {"avx512f", (bool)__builtin_cpu_supports("avx512f")},
      {"avx512bw", (bool)__builtin_cpu_supports("avx512bw")},
      {"avx512dq", (bool)__builtin_cpu_supports("avx512dq")},
      {"avx512vl", (bool)__builtin_cpu_supports("avx512vl")},
      {"avx512vnni", (bool)__builtin_cpu_supports("avx512vnni")},
      {"avx512bf16", (bool)__builtin_cpu_supports("avx512bf16")},
  };
  size_t pos = 0;
  while (pos < features.size()) {
    size_t end = features.find(',', pos);
    std::string_view f = features.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? features.size() : end + 1;
    if (f.size() < 2 || f[0] != '+')
      continue;
    for (const Known &k : known)
      if (f.substr(1) == k.name && !k.has)
        return k.name;
  }
#endif
  (void)features;
  return "";
}

} // namespace kiln::rt::artifact
