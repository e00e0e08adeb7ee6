//===- CompileCache.cpp - kiln's on-disk compile cache ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Entry layout (little-endian, see CompileCache.h):
//   0  magic "KILNCC\0\1"      8  format version (u32)   12 reserved (u32)
//   16 key length (u64)        24 payload length (u64)   32 checksum (u64)
//   40 key bytes, then payload bytes; the file ends right after them.
// The checksum is FNV-1a over key and payload. Writers create
// `<entry>.tmp.<pid>.<n>` in the same folder and rename it over the entry.
//===----------------------------------------------------------------------===//
#include "runtime/CompileCache.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt {
namespace {

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getU64(std::string_view in, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

uint32_t getU32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

/// Creates `dir` and its parents (like mkdir -p); true when it exists.
bool makeDirs(const std::string &dir) {
  struct stat st;
  if (dir.empty() || ::stat(dir.c_str(), &st) == 0)
    return !dir.empty() && S_ISDIR(st.st_mode);
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !makeDirs(dir.substr(0, slash)))
    return false;
  return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

/// Reads the whole file; false when it cannot be opened or read.
bool readFile(const std::string &path, std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t n = ::read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      ok = n > 0;
      done += ok ? static_cast<size_t>(n) : 0;
    }
    out.resize(done);
  }
  ::close(fd);
  return ok;
}

/// Writes all of `data` to `fd`.
bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

} // namespace

uint64_t fnv1a64(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string cacheDigest(std::string_view key) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(fnv1a64(key)),
                static_cast<unsigned long long>(fnv1a64(key, 0x6c62272e07bb0142ull)));
  return buf;
}

std::string DiskCache::entryPath(std::string_view key) const {
  return dir_ + "/" + cacheDigest(key) + ".kc";
}

std::string DiskCache::encode(std::string_view key, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderSize + key.size() + payload.size());
  out.append(kMagic, sizeof(kMagic));
  putU32(out, kFormatVersion);
  putU32(out, 0);
  putU64(out, key.size());
  putU64(out, payload.size());
  putU64(out, fnv1a64(payload, fnv1a64(key)));
  out.append(key);
  out.append(payload);
  return out;
}

CacheLookup DiskCache::decode(std::string_view bytes, std::string_view key) {
  CacheLookup r;
  auto corrupt = [&](std::string why) {
    r.status = CacheLookup::Status::Corrupt;
    r.message = std::move(why);
    return r;
  };
  if (bytes.size() < kHeaderSize)
    return corrupt("truncated header (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("bad magic");
  if (uint32_t v = getU32(bytes, 8); v != kFormatVersion)
    return corrupt("format version " + std::to_string(v) + ", expected " +
                   std::to_string(kFormatVersion));
  if (getU32(bytes, 12) != 0)
    return corrupt("reserved header field is not zero");
  uint64_t keyLen = getU64(bytes, 16), payloadLen = getU64(bytes, 24);
  uint64_t body = bytes.size() - kHeaderSize;
  if (keyLen > body || payloadLen != body - keyLen)
    return corrupt("length mismatch: header says " + std::to_string(keyLen) + " + " +
                   std::to_string(payloadLen) + " bytes, file has " + std::to_string(body));
  std::string_view storedKey = bytes.substr(kHeaderSize, keyLen);
  std::string_view payload = bytes.substr(kHeaderSize + keyLen);
  if (fnv1a64(payload, fnv1a64(storedKey)) != getU64(bytes, 32))
    return corrupt("checksum mismatch");
  if (storedKey != key)
    return r; // A digest collision: a miss; store() replaces the entry.
  r.status = CacheLookup::Status::Hit;
  r.payload.assign(payload);
  return r;
}

CacheLookup DiskCache::load(std::string_view key) const {
  std::string path = entryPath(key), bytes;
  if (!readFile(path, bytes))
    return CacheLookup{};
  CacheLookup r = decode(bytes, key);
  if (r.status == CacheLookup::Status::Corrupt)
    r.message = path + ": " + r.message;
  return r;
}

bool DiskCache::store(std::string_view key, std::string_view payload, std::string &error) const {
  static std::atomic<unsigned> counter{0};
  if (!makeDirs(dir_)) {
    error = "cannot create cache folder " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  std::string path = entryPath(key);
  std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = writeAll(fd, encode(key, payload));
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0)
    return true;
  error = "cannot write " + path + ": " + std::strerror(ok ? errno : savedErrno);
  ::unlink(tmp.c_str());
  return false;
}

} // namespace kiln::rt
