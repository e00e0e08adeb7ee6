//===- CacheFiles.h - careful file operations of the compile cache -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The POSIX side of the on-disk compile cache (CompileCache.h), kept apart
// from the entry format: checking that a folder belongs to this user and
// nobody else may write it, reading a file without following links or
// blocking on FIFOs and only up to a size bound, writing a file atomically
// (temporary file + rename, mode 0600), the per-user secret, and listing
// entries for LRU eviction. Every failure is a message, never a crash.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CACHEFILES_H
#define KILN_RUNTIME_CACHEFILES_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt::cachefiles {

/// Creates `dir` (and missing parents, mode 0700) when absent, then checks
/// that it is a folder owned by the effective user and not writable by
/// group or others. False with `why` set otherwise.
bool checkPrivateFolder(const std::string &dir, std::string &why);

/// The outcome of readBounded.
enum class ReadStatus {
  /// `out` holds the file's bytes.
  Ok,
  /// No such file.
  Missing,
  /// The file was not read; `why` says why (not a regular file, larger than
  /// the bound, unreadable, changed while opening).
  Refused,
};

/// Reads the regular file `path` into `out` when it has at most `maxBytes`
/// bytes: lstat first (a symlink, FIFO, socket, device or folder is refused
/// without being opened), then open with O_NOFOLLOW | O_NONBLOCK and check
/// that the opened file is the one inspected. With `touch`, a successful
/// read also sets the file's modification time to now (its LRU stamp).
ReadStatus readBounded(const std::string &path, uint64_t maxBytes, bool touch, std::string &out,
                       std::string &why);

/// Writes `data` to `path` atomically: a temporary file (mode 0600) in the
/// same folder renamed over `path` (a link or FIFO at `path` is replaced,
/// never followed). False with `why` set on failure.
bool writeAtomically(const std::string &path, std::string_view data, std::string &why);

/// Reads the `size`-byte secret `<dir>/<name>`, creating it from the
/// system's random source on first use (linked into place, so concurrent
/// first uses agree). Refuses a secret that is not a regular file owned by
/// this user with no group or other permissions, or has the wrong size.
bool loadOrCreateSecret(const std::string &dir, const char *name, size_t size, std::string &secret,
                        std::string &why);

/// One entry file of a folder, for eviction.
struct EntryFile {
  /// Full path.
  std::string path;
  /// Bytes on disk (the file size).
  uint64_t size = 0;
  /// Last modification (nanoseconds since the epoch): the LRU stamp.
  int64_t mtimeNs = 0;
};

/// The regular files in `dir` whose names end in `suffix` (lstat, no links
/// followed).
std::vector<EntryFile> listEntries(const std::string &dir, std::string_view suffix);

} // namespace kiln::rt::cachefiles

#endif // KILN_RUNTIME_CACHEFILES_H
