//===- CompileCache.h - kiln's on-disk compile cache ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A folder of compiled artifacts keyed by arbitrary key text (for the CPU
// backend: the captured IR, the host CPU, kiln's build id and the pipeline).
// Each entry is one file `<digest>.kc` holding a header (magic, format
// version, key and payload lengths, checksum), the full key and the payload.
// Entries are written to a temporary file and renamed into place, so a
// reader sees an old entry, a new one or none, never a partial one, even
// with several processes writing the same key. A loaded entry is validated
// (magic, lengths against the file size, checksum, exact key) and anything
// that does not validate is reported as corrupt, never returned. The
// runtime links no MLIR or LLVM: this is plain C++ and POSIX.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMPILECACHE_H
#define KILN_RUNTIME_COMPILECACHE_H

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::rt {

/// 64-bit FNV-1a of `data`, continuing from `seed`.
uint64_t fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ull);

/// A 128-bit hex digest of `key` (two seeded FNV-1a passes): the entry's
/// file name. Collisions cost a miss, never a wrong hit (the full key is
/// stored in the entry and compared on load).
std::string cacheDigest(std::string_view key);

/// The outcome of DiskCache::load.
struct CacheLookup {
  enum class Status {
    /// No entry, or an entry written for another key (digest collision).
    Miss,
    /// `payload` holds the stored bytes.
    Hit,
    /// The entry exists but does not validate; `message` says why.
    Corrupt,
  };
  Status status = Status::Miss;
  std::string payload;
  std::string message;
};

/// One cache folder. Cheap to construct; every call works on the files.
class DiskCache {
public:
  /// The magic at offset 0 of every entry.
  static constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'C', '\0', '\1'};
  /// Bumped whenever the entry layout changes (older entries then miss).
  static constexpr uint32_t kFormatVersion = 1;
  /// Header bytes before the key: magic, version, reserved, key length,
  /// payload length, checksum of key + payload.
  static constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8 + 8;

  /// A cache in `dir` (created on the first store).
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}

  /// The file that holds (or would hold) the entry for `key`.
  std::string entryPath(std::string_view key) const;

  /// Reads and validates the entry for `key`.
  CacheLookup load(std::string_view key) const;

  /// Writes the entry for `key` atomically (temporary file + rename).
  /// Returns false with `error` set when the folder or file cannot be
  /// written; the cache is then simply not populated.
  bool store(std::string_view key, std::string_view payload, std::string &error) const;

  /// Serializes one entry (header, key, payload) as `store` writes it.
  static std::string encode(std::string_view key, std::string_view payload);

  /// Validates `bytes` as an entry for `key` (what `load` does after
  /// reading the file).
  static CacheLookup decode(std::string_view bytes, std::string_view key);

private:
  std::string dir_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_COMPILECACHE_H
