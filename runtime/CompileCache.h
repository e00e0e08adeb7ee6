//===- CompileCache.h - kiln's on-disk compile cache ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A folder of compiled artifacts (machine code kiln loads and runs) keyed by
// arbitrary key text (for the CPU backend: the captured IR, the host CPU,
// kiln's build id and the pipeline). Each entry is one file `<digest>.kc`
// holding a header (magic, format version, key and payload lengths, an
// HMAC-SHA256), the full key and the payload. The HMAC is keyed by a
// per-user secret (`secret.key`, 32 random bytes, mode 0600) in the folder,
// so an entry that anyone else wrote, or that was damaged or swapped with
// another, never validates. The folder itself is refused (the caller then
// runs without a cache) unless it is a folder owned by this user that
// nobody else may write. Entries are read without following links or
// blocking (lstat first, then O_NOFOLLOW | O_NONBLOCK), and only up to a
// size bound; writes go to a temporary file renamed into place, and a size
// bound on the folder evicts the least recently used entries. Plain C++,
// POSIX and OpenSSL's libcrypto (the HMAC and the secret's random bytes):
// the runtime links no MLIR or LLVM.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMPILECACHE_H
#define KILN_RUNTIME_COMPILECACHE_H

#include <cstdint>
#include <optional>
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
    /// The entry exists but is not used: it does not validate (bad header,
    /// lengths or HMAC), or it is not a regular file, too large or
    /// unreadable; `message` says why. The caller recompiles and stores.
    Corrupt,
  };
  Status status = Status::Miss;
  std::string payload;
  std::string message;
};

/// How a cache folder is used (kiln.config; the frontend passes them down).
struct DiskCacheOptions {
  /// Upper bound on the total size of the folder's entries, in bytes; 0 is
  /// unbounded. A store that goes past it deletes the least recently used
  /// entries (by modification time, which a hit refreshes) until it fits;
  /// an entry larger than the bound is not stored.
  uint64_t maxBytes = 0;
};

/// One cache folder. Obtained from DiskCache::open, which checks the folder
/// and reads its secret; then every call works on the files.
class DiskCache {
public:
  /// The magic at offset 0 of every entry.
  static constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'C', '\0', '\2'};
  /// Bumped whenever the entry layout changes (older entries then fail to
  /// validate and are rebuilt).
  static constexpr uint32_t kFormatVersion = 2;
  /// Bytes of the HMAC-SHA256 in the header.
  static constexpr size_t kMacSize = 32;
  /// Header bytes before the key: magic, version, reserved, key length,
  /// payload length, HMAC.
  static constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8 + kMacSize;
  /// No entry larger than this is read, whatever the folder bound says.
  static constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;
  /// The per-user secret's file name inside the folder.
  static constexpr const char *kSecretName = "secret.key";
  /// Bytes of the secret.
  static constexpr size_t kSecretSize = 32;

  /// Opens the cache folder `dir`: creates it (mode 0700) when missing,
  /// refuses it when it is not a folder, not owned by this user or writable
  /// by group or others, then reads the secret (creating it, 0600, on first
  /// use) and refuses a secret file that is not a regular file of this
  /// user's with mode 0600. On refusal returns std::nullopt and sets
  /// `warning` to the reason (the caller runs without a cache).
  static std::optional<DiskCache> open(const std::string &dir, DiskCacheOptions options,
                                       std::string &warning);

  /// The file that holds (or would hold) the entry for `key`.
  std::string entryPath(std::string_view key) const;

  /// Reads and validates the entry for `key`. Never follows a link, opens a
  /// FIFO or device, or reads more than the size bound.
  CacheLookup load(std::string_view key) const;

  /// Writes the entry for `key` atomically (temporary file + rename), then
  /// evicts entries beyond the size bound. Returns false with `error` set
  /// when the entry cannot be written; the cache is then simply not
  /// populated.
  bool store(std::string_view key, std::string_view payload, std::string &error) const;

  /// Serializes one entry (header with its HMAC under `secret`, key,
  /// payload) as `store` writes it.
  static std::string encode(std::string_view key, std::string_view payload,
                            std::string_view secret);

  /// Validates `bytes` as an entry for `key` under `secret` (what `load`
  /// does after reading the file).
  static CacheLookup decode(std::string_view bytes, std::string_view key, std::string_view secret);

  /// The cache folder.
  const std::string &dir() const { return dir_; }

private:
  DiskCache(std::string dir, std::string secret, DiskCacheOptions options)
      : dir_(std::move(dir)), secret_(std::move(secret)), options_(options) {}

  /// Deletes least recently used entries until the folder's entries fit
  /// `options_.maxBytes`.
  void evict() const;

  std::string dir_;
  std::string secret_;
  DiskCacheOptions options_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_COMPILECACHE_H
