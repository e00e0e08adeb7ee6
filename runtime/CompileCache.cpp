//===- CompileCache.cpp - kiln's on-disk compile cache ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Entry layout (little-endian, see CompileCache.h):
//   0  magic "KILNCC\0\2"      8  format version (u32)   12 reserved (u32)
//   16 key length (u64)        24 payload length (u64)   32 HMAC-SHA256 (32 bytes)
//   64 key bytes, then payload bytes; the file ends right after them.
// The HMAC, keyed by the folder's secret, covers bytes 0..32 (so the
// lengths and version), the key and the payload. The file operations
// (folder checks, bounded reads, atomic writes, the secret) are in
// CacheFiles.cpp.
//===----------------------------------------------------------------------===//
#include "runtime/CompileCache.h"
#include "runtime/CacheFiles.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

/// Offset of the HMAC in the header (what precedes it is authenticated).
constexpr size_t kMacOffset = 32;

/// HMAC-SHA256 under `secret` of `head` then `body`; empty when OpenSSL
/// fails (the entry then never validates).
std::string hmacSha256(std::string_view secret, std::string_view head, std::string_view body) {
  std::string out(DiskCache::kMacSize, '\0');
  EVP_MAC *mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  size_t len = 0;
  bool ok =
      ctx &&
      EVP_MAC_init(ctx, reinterpret_cast<const unsigned char *>(secret.data()), secret.size(),
                   params) == 1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char *>(head.data()), head.size()) == 1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char *>(body.data()), body.size()) == 1 &&
      EVP_MAC_final(ctx, reinterpret_cast<unsigned char *>(out.data()), &len, out.size()) == 1 &&
      len == out.size();
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return ok ? out : std::string();
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

std::optional<DiskCache> DiskCache::open(const std::string &dir, DiskCacheOptions options,
                                         std::string &warning) {
  std::string secret;
  if (!cachefiles::checkPrivateFolder(dir, warning) ||
      !cachefiles::loadOrCreateSecret(dir, kSecretName, kSecretSize, secret, warning))
    return std::nullopt;
  return DiskCache(dir, std::move(secret), options);
}

std::string DiskCache::entryPath(std::string_view key) const {
  return dir_ + "/" + cacheDigest(key) + ".kc";
}

std::string DiskCache::encode(std::string_view key, std::string_view payload,
                              std::string_view secret) {
  std::string out;
  out.reserve(kHeaderSize + key.size() + payload.size());
  out.append(kMagic, sizeof(kMagic));
  putU32(out, kFormatVersion);
  putU32(out, 0);
  putU64(out, key.size());
  putU64(out, payload.size());
  out.append(kMacSize, '\0');
  out.append(key);
  out.append(payload);
  std::string mac = hmacSha256(secret, std::string_view(out).substr(0, kMacOffset),
                               std::string_view(out).substr(kHeaderSize));
  out.replace(kMacOffset, kMacSize, mac.empty() ? std::string(kMacSize, '\0') : mac);
  return out;
}

CacheLookup DiskCache::decode(std::string_view bytes, std::string_view key,
                              std::string_view secret) {
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
  std::string mac = hmacSha256(secret, bytes.substr(0, kMacOffset), bytes.substr(kHeaderSize));
  if (mac.empty() || CRYPTO_memcmp(mac.data(), bytes.data() + kMacOffset, kMacSize) != 0)
    return corrupt("authentication failed (HMAC mismatch: damaged, or not written by this "
                   "user's kiln)");
  std::string_view storedKey = bytes.substr(kHeaderSize, keyLen);
  if (storedKey != key)
    return r; // A digest collision: a miss; store() replaces the entry.
  r.status = CacheLookup::Status::Hit;
  r.payload.assign(bytes.substr(kHeaderSize + keyLen));
  return r;
}

CacheLookup DiskCache::load(std::string_view key) const {
  std::string path = entryPath(key), bytes, why;
  uint64_t bound = options_.maxBytes ? std::min(options_.maxBytes, kMaxEntryBytes) : kMaxEntryBytes;
  CacheLookup r;
  switch (cachefiles::readBounded(path, bound, /*touch=*/true, bytes, why)) {
  case cachefiles::ReadStatus::Missing:
    return r;
  case cachefiles::ReadStatus::Refused:
    r.status = CacheLookup::Status::Corrupt;
    r.message = path + ": " + why;
    return r;
  case cachefiles::ReadStatus::Ok:
    break;
  }
  r = decode(bytes, key, secret_);
  if (r.status == CacheLookup::Status::Corrupt)
    r.message = path + ": " + r.message;
  return r;
}

bool DiskCache::store(std::string_view key, std::string_view payload, std::string &error) const {
  std::string bytes = encode(key, payload, secret_);
  uint64_t bound = options_.maxBytes ? std::min(options_.maxBytes, kMaxEntryBytes) : kMaxEntryBytes;
  if (bytes.size() > bound) {
    error = "entry of " + std::to_string(bytes.size()) + " bytes not stored: larger than the " +
            std::to_string(bound) + "-byte bound";
    return false;
  }
  if (!cachefiles::writeAtomically(entryPath(key), bytes, error))
    return false;
  evict();
  return true;
}

void DiskCache::evict() const {
  if (!options_.maxBytes)
    return;
  std::vector<cachefiles::EntryFile> files = cachefiles::listEntries(dir_, ".kc");
  uint64_t total = 0;
  for (const auto &f : files)
    total += f.size;
  if (total <= options_.maxBytes)
    return;
  std::sort(files.begin(), files.end(),
            [](const auto &a, const auto &b) { return a.mtimeNs < b.mtimeNs; });
  for (const auto &f : files) {
    if (total <= options_.maxBytes)
      break;
    if (::unlink(f.path.c_str()) == 0)
      total -= f.size;
  }
}

} // namespace kiln::rt
