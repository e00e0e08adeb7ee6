//===- CompileCacheTest.cpp - the on-disk compile cache -----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// runtime/CompileCache: entries round-trip; truncated, bit-flipped, foreign
// and wrong-key files are never returned; writes leave no temporary files.
// codegen: a second compileForCpu of the same module (fresh MLIRContext)
// loads the object from disk and computes the same result; a corrupt entry
// is reported, recompiled and replaced.
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"
#include "codegen/cpu/JitCompiler.h"
#include "runtime/CompileCache.h"
#include "runtime/MemRefDescriptor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using kiln::rt::CacheLookup;
using kiln::rt::DiskCache;

/// A fresh temporary folder, removed (with its files) at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/kiln-cache-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const std::string &f : files())
      ::unlink((path + "/" + f).c_str());
    ::rmdir(path.c_str());
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR *d = ::opendir(path.c_str())) {
      while (dirent *e = ::readdir(d))
        if (e->d_name[0] != '.')
          out.push_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Opens the cache folder `path` (which must be accepted).
DiskCache openCache(const std::string &path, uint64_t maxBytes = 0) {
  std::string warning;
  std::optional<DiskCache> cache = DiskCache::open(path, {maxBytes}, warning);
  EXPECT_TRUE(cache.has_value()) << warning;
  return cache ? *cache : *DiskCache::open("/tmp", {}, warning);
}

const std::string kSecret(32, 's');

TEST(DiskCacheTest, StoreThenLoadRoundTrips) {
  TempDir dir;
  DiskCache cache = openCache(dir.path + "/nested/folder");
  std::string payload("\0\1binary\xff payload", 17), error;
  EXPECT_EQ(cache.load("key").status, CacheLookup::Status::Miss);
  ASSERT_TRUE(cache.store("key", payload, error)) << error;
  CacheLookup r = cache.load("key");
  ASSERT_EQ(r.status, CacheLookup::Status::Hit) << r.message;
  EXPECT_EQ(r.payload, payload);
  EXPECT_EQ(cache.load("other key").status, CacheLookup::Status::Miss);
  // Overwriting is atomic and leaves no temporary file behind.
  ASSERT_TRUE(cache.store("key", "second", error)) << error;
  EXPECT_EQ(cache.load("key").payload, "second");
  // The folder and the secret are private to the user.
  struct stat st;
  ASSERT_EQ(::stat(cache.dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((cache.dir() + "/secret.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  TempDir nested;
  DiskCache flat = openCache(nested.path);
  ASSERT_TRUE(flat.store("a", "1", error));
  ASSERT_TRUE(flat.store("b", "2", error));
  EXPECT_EQ(nested.files().size(), 3u); // two entries and the secret
  for (const std::string &f : nested.files())
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  ::unlink(cache.entryPath("key").c_str());
  ::unlink((cache.dir() + "/secret.key").c_str());
  ::rmdir((dir.path + "/nested/folder").c_str());
  ::rmdir((dir.path + "/nested").c_str());
}

TEST(DiskCacheTest, EveryTruncationIsCorrupt) {
  std::string entry = DiskCache::encode("the key", "the payload bytes", kSecret);
  ASSERT_EQ(DiskCache::decode(entry, "the key", kSecret).status, CacheLookup::Status::Hit);
  for (size_t n = 0; n < entry.size(); ++n)
    EXPECT_EQ(DiskCache::decode(entry.substr(0, n), "the key", kSecret).status,
              CacheLookup::Status::Corrupt)
        << "truncated to " << n << " bytes";
  EXPECT_EQ(DiskCache::decode(entry + "x", "the key", kSecret).status,
            CacheLookup::Status::Corrupt);
}

TEST(DiskCacheTest, EveryFlippedBitIsRejected) {
  std::string entry = DiskCache::encode("the key", "the payload bytes", kSecret);
  for (size_t i = 0; i < entry.size() * 8; ++i) {
    std::string bad = entry;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    CacheLookup r = DiskCache::decode(bad, "the key", kSecret);
    EXPECT_EQ(r.status, CacheLookup::Status::Corrupt) << "flipped bit " << i;
  }
  CacheLookup r = DiskCache::decode(std::string(100, 'x'), "k", kSecret);
  EXPECT_EQ(r.status, CacheLookup::Status::Corrupt);
  EXPECT_EQ(r.message, "bad magic");
}

TEST(DiskCacheTest, EntryUnderAnotherSecretIsRejected) {
  std::string entry = DiskCache::encode("the key", "payload", std::string(32, 'o'));
  CacheLookup r = DiskCache::decode(entry, "the key", kSecret);
  EXPECT_EQ(r.status, CacheLookup::Status::Corrupt);
  EXPECT_NE(r.message.find("HMAC mismatch"), std::string::npos) << r.message;
}

TEST(DiskCacheTest, EntryOfAnotherKeyIsAMiss) {
  TempDir dir;
  DiskCache cache = openCache(dir.path);
  std::string secret = readAll(dir.path + "/secret.key");
  // Simulates a digest collision: the file for "mine" holds "theirs".
  writeAll(cache.entryPath("mine"), DiskCache::encode("theirs", "payload", secret));
  EXPECT_EQ(cache.load("mine").status, CacheLookup::Status::Miss);
}

TEST(DiskCacheTest, OddFilesAreSkippedWithoutBlocking) {
  TempDir dir;
  DiskCache cache = openCache(dir.path);
  std::string error;
  ::mkfifo(cache.entryPath("fifo").c_str(), 0600);
  CacheLookup r = cache.load("fifo"); // would block forever if opened for reading
  EXPECT_EQ(r.status, CacheLookup::Status::Corrupt);
  EXPECT_NE(r.message.find("a FIFO"), std::string::npos) << r.message;
  ASSERT_EQ(::symlink("/etc/passwd", cache.entryPath("link").c_str()), 0);
  r = cache.load("link");
  EXPECT_NE(r.message.find("a symbolic link"), std::string::npos) << r.message;
  ASSERT_EQ(::truncate((writeAll(cache.entryPath("huge"), "x"), cache.entryPath("huge")).c_str(),
                       off_t(1) << 40),
            0); // sparse: takes no disk space
  r = cache.load("huge");
  EXPECT_NE(r.message.find("more than the"), std::string::npos) << r.message;
  // A store replaces each of them (the link itself, not its target).
  for (const char *key : {"fifo", "link", "huge"}) {
    ASSERT_TRUE(cache.store(key, "fresh", error)) << error;
    EXPECT_EQ(cache.load(key).payload, "fresh");
  }
}

TEST(DiskCacheTest, SharedFoldersAreRefused) {
  TempDir dir;
  std::string warning;
  ASSERT_EQ(::chmod(dir.path.c_str(), 0777), 0);
  EXPECT_FALSE(DiskCache::open(dir.path, {}, warning));
  EXPECT_NE(warning.find("writable by other users"), std::string::npos) << warning;
  ASSERT_EQ(::chmod(dir.path.c_str(), 0700), 0);
  ASSERT_TRUE(DiskCache::open(dir.path, {}, warning));
  // A secret readable by others is refused too.
  ASSERT_EQ(::chmod((dir.path + "/secret.key").c_str(), 0644), 0);
  EXPECT_FALSE(DiskCache::open(dir.path, {}, warning));
  EXPECT_NE(warning.find("mode 0600"), std::string::npos) << warning;
}

TEST(DiskCacheTest, StoresEvictTheLeastRecentlyUsed) {
  TempDir dir;
  std::string payload(400, 'p'), error;
  DiskCache cache = openCache(dir.path, 2000); // room for four entries
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(cache.store("k" + std::to_string(i), payload, error)) << error;
    struct timespec times[2] = {{0, UTIME_OMIT}, {1000 + i, 0}};
    ::utimensat(AT_FDCWD, cache.entryPath("k" + std::to_string(i)).c_str(), times, 0);
  }
  ASSERT_EQ(cache.load("k0").status, CacheLookup::Status::Hit); // k0 is now the newest
  ASSERT_TRUE(cache.store("k4", payload, error)) << error;
  EXPECT_EQ(cache.load("k1").status, CacheLookup::Status::Miss); // the oldest went
  for (const char *kept : {"k0", "k2", "k3", "k4"})
    EXPECT_EQ(cache.load(kept).status, CacheLookup::Status::Hit) << kept;
  EXPECT_FALSE(cache.store("big", std::string(3000, 'b'), error));
}

constexpr const char *kModule = R"mlir(
  func.func @forward(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>) -> tensor<16x8xf32> {
    %m = kiln.matmul %x, %w : tensor<16x32xf32>, tensor<32x8xf32>
    %r = kiln.tanh %m : tensor<16x8xf32>
    return %r : tensor<16x8xf32>
  })mlir";

/// Compiles kModule in a fresh context with `cacheDir` and runs it on
/// fixed inputs; returns the 16x8 output.
std::vector<float> compileAndRun(const std::string &cacheDir, mlir::kiln::CpuCompileInfo &info) {
  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kModule, &ctx);
  mlir::kiln::CpuCompileOptions options;
  options.cacheDir = cacheDir;
  std::string error;
  kiln::rt::CompiledFunction fn =
      mlir::kiln::compileForCpu(*module, "forward", options, error, &info);
  EXPECT_TRUE(fn.entry) << error;
  if (!fn.entry)
    return {};
  std::vector<float> x(16 * 32), w(32 * 8), out(16 * 8);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.01f * float(i % 97) - 0.3f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.02f * float(i % 31) - 0.25f;
  int64_t xs[] = {16, 32}, xst[] = {32, 1}, ws[] = {32, 8}, wst[] = {8, 1}, os[] = {16, 8},
          ost[] = {8, 1};
  kiln::rt::MemRefDescriptor dx, dw, dout;
  dx.reset(x.data(), xs, xst, 2);
  dw.reset(w.data(), ws, wst, 2);
  dout.reset(out.data(), os, ost, 2);
  void *ptrs[] = {dx.data(), dw.data(), dout.data()};
  void *args[] = {&ptrs[0], &ptrs[1], &ptrs[2]};
  fn(args);
  return out;
}

TEST(DiskCacheTest, SecondCompileLoadsTheObject) {
  TempDir dir;
  mlir::kiln::CpuCompileInfo cold, warm, corrupt, off;
  std::vector<float> first = compileAndRun(dir.path, cold);
  EXPECT_FALSE(cold.diskHit);
  EXPECT_TRUE(cold.diskMiss);
  EXPECT_TRUE(cold.diskStored) << cold.cacheMessage;
  ASSERT_EQ(dir.files().size(), 2u); // the entry and the secret
  std::vector<float> second = compileAndRun(dir.path, warm);
  EXPECT_TRUE(warm.diskHit) << warm.cacheMessage;
  EXPECT_FALSE(warm.diskStored);
  EXPECT_EQ(first, second);
  // A bit flipped in the stored object: reported, recompiled, replaced.
  std::string path =
      dir.path + "/" + (dir.files()[0] == "secret.key" ? dir.files()[1] : dir.files()[0]);
  std::string bytes = readAll(path);
  bytes[bytes.size() / 2] ^= 1;
  writeAll(path, bytes);
  std::vector<float> third = compileAndRun(dir.path, corrupt);
  EXPECT_TRUE(corrupt.diskCorrupt);
  EXPECT_FALSE(corrupt.diskHit);
  EXPECT_NE(corrupt.cacheMessage.find("HMAC mismatch"), std::string::npos) << corrupt.cacheMessage;
  EXPECT_TRUE(corrupt.diskStored);
  EXPECT_EQ(first, third);
  EXPECT_EQ(DiskCache::decode(readAll(path), "x", readAll(dir.path + "/secret.key")).status,
            CacheLookup::Status::Miss);
  // No folder: the cache is off and nothing is counted.
  compileAndRun("", off);
  EXPECT_FALSE(off.diskHit || off.diskMiss || off.diskStored);
}

} // namespace
