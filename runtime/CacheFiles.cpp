//===- CacheFiles.cpp - careful file operations of the compile cache ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// See CacheFiles.h. Plain POSIX plus OpenSSL's RAND_bytes for the secret.
//===----------------------------------------------------------------------===//
#include "runtime/CacheFiles.h"

#include <openssl/rand.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt::cachefiles {
namespace {

std::string errnoText() { return std::strerror(errno); }

/// What kind of file `mode` is, for messages.
const char *kindOf(mode_t mode) {
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  return "not a regular file";
}

/// Creates `dir` and its parents (mode 0700); true when it exists.
bool makeDirs(const std::string &dir) {
  struct stat st;
  if (dir.empty() || ::stat(dir.c_str(), &st) == 0)
    return !dir.empty() && S_ISDIR(st.st_mode);
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !makeDirs(dir.substr(0, slash)))
    return false;
  return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

/// Reads up to `size` bytes of `fd` into `out` (stops early at end of file).
bool readFd(int fd, size_t size, std::string &out) {
  out.resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, out.data() + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return true;
}

bool writeFd(int fd, std::string_view data) {
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

/// A unique temporary name next to `path`.
std::string tempName(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

} // namespace

bool checkPrivateFolder(const std::string &dir, std::string &why) {
  if (!makeDirs(dir)) {
    why = "cannot create cache folder " + dir + ": " + errnoText();
    return false;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    why = "cannot inspect cache folder " + dir + ": " + errnoText();
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    why = "cache folder " + dir + " is not a folder";
    return false;
  }
  if (st.st_uid != ::geteuid()) {
    why = "cache folder " + dir + " is owned by uid " + std::to_string(st.st_uid) +
          ", not by this user (uid " + std::to_string(::geteuid()) + ")";
    return false;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = "cache folder " + dir + " is writable by other users (mode " + mode +
          "); make it private with chmod go-w";
    return false;
  }
  return true;
}

ReadStatus readBounded(const std::string &path, uint64_t maxBytes, bool touch, std::string &out,
                       std::string &why) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return ReadStatus::Missing;
    why = "cannot inspect: " + errnoText();
    return ReadStatus::Refused;
  }
  if (!S_ISREG(st.st_mode)) {
    why = std::string("skipped without opening it: it is ") + kindOf(st.st_mode);
    return ReadStatus::Refused;
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    why = "skipped: " + std::to_string(st.st_size) + " bytes, more than the " +
          std::to_string(maxBytes) + " an entry may have";
    return ReadStatus::Refused;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return ReadStatus::Missing;
    why = "unreadable: " + errnoText();
    return ReadStatus::Refused;
  }
  struct stat opened;
  bool same = ::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode) && opened.st_ino == st.st_ino &&
              opened.st_dev == st.st_dev && static_cast<uint64_t>(opened.st_size) <= maxBytes;
  bool ok = same && readFd(fd, static_cast<size_t>(opened.st_size), out);
  if (ok && touch)
    ::futimens(fd, nullptr); // LRU stamp; failing to set it only ages the entry
  ::close(fd);
  if (!same)
    why = "skipped: the file changed while it was being opened";
  else if (!ok)
    why = "unreadable: " + errnoText();
  return ok ? ReadStatus::Ok : ReadStatus::Refused;
}

bool writeAtomically(const std::string &path, std::string_view data, std::string &why) {
  std::string tmp = tempName(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    why = "cannot create " + tmp + ": " + errnoText();
    return false;
  }
  bool ok = writeFd(fd, data);
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0)
    return true;
  why = "cannot write " + path + ": " + std::strerror(ok ? errno : savedErrno);
  ::unlink(tmp.c_str());
  return false;
}

bool loadOrCreateSecret(const std::string &dir, const char *name, size_t size, std::string &secret,
                        std::string &why) {
  std::string path = dir + "/" + name;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st;
      bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                (st.st_mode & 077) == 0 && static_cast<size_t>(st.st_size) == size &&
                readFd(fd, size, secret) && secret.size() == size;
      ::close(fd);
      if (!ok)
        why = "the cache secret " + path + " is not a " + std::to_string(size) +
              "-byte regular file of this user's with mode 0600; delete it to start afresh";
      return ok;
    }
    if (errno != ENOENT) {
      why = "cannot open the cache secret " + path + ": " + errnoText();
      return false;
    }
    // First use: write the secret under a temporary name, then link it into
    // place (fails if another process won the race: then read theirs).
    std::string fresh(size, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char *>(fresh.data()), static_cast<int>(size)) != 1) {
      why = "no random bytes for the cache secret";
      return false;
    }
    std::string tmp = tempName(path);
    int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
      why = "cannot create the cache secret " + tmp + ": " + errnoText();
      return false;
    }
    bool written = writeFd(out, fresh) && ::fchmod(out, 0600) == 0;
    written = ::close(out) == 0 && written;
    bool linked = written && (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST);
    ::unlink(tmp.c_str());
    if (!linked) {
      why = "cannot create the cache secret " + path + ": " + errnoText();
      return false;
    }
  }
  why = "the cache secret " + path + " vanished while it was being created";
  return false;
}

std::vector<EntryFile> listEntries(const std::string &dir, std::string_view suffix) {
  std::vector<EntryFile> out;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return out;
  while (dirent *e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
      continue;
    std::string path = dir + "/" + std::string(name);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    out.push_back({path, static_cast<uint64_t>(st.st_size),
                   int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }
  ::closedir(d);
  return out;
}

} // namespace kiln::rt::cachefiles
