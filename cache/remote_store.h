// A remote executable cache over plain HTTP: GET and PUT of
// <url>/<key[0:2]>/<key>.ipuexe and <key>.manifest, as a WebDAV-enabled nginx or any static file
// server with PUT serves them (docs/cache.md, "Remote cache"). Nothing here trusts the server:
// callers compare the manifest byte for byte and verify the executable's frame, checksum and key,
// and no answer may be larger or slower than RemoteLimits allows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace ipu::cache {

// What one request may cost. A remote cache is an accelerator: a slow, dead or hostile server must
// cost seconds and kilobytes, never minutes or gigabytes.
struct RemoteLimits {
  // A manifest is a few hundred bytes of `name=value` lines.
  uint64_t max_manifest_bytes = uint64_t{64} << 10;
  // A framed executable: callers that know the executable format pass its own bound.
  uint64_t max_executable_bytes = uint64_t{1} << 30;
  long connect_timeout_ms = 2000;
  // Whole requests, from connecting to the last byte.
  long manifest_timeout_ms = 10000;
  long executable_timeout_ms = 60000;
};

struct RemoteEntry {
  std::string manifest_text;
  std::string executable_bytes;
};

class RemoteStore {
public:
  // `url` is http:// or https://; a trailing '/' is ignored. InvalidArgument for anything else.
  static StatusOr<RemoteStore> create(std::string url, const RemoteLimits& limits = RemoteLimits());

  const std::string& url() const { return m_url; }

  // The entry of `key` (a valid key): NotFound if the server answers 404 for either file,
  // IoError for anything else (connection refused, timeout, another HTTP status, a body larger
  // than its cap, which is not read further), naming the URL.
  StatusOr<RemoteEntry> fetch(const std::string& key) const;

  // Uploads the executable, then the manifest (the commit marker, as in the local store), by
  // plain PUTs without `Expect: 100-continue`. IoError naming the URL if the server cannot be
  // reached or answers anything but 2xx ("refused the upload (HTTP 403)").
  Status put(const std::string& key, std::string_view manifest_text, std::string_view executable_bytes) const;

private:
  RemoteStore(std::string url, const RemoteLimits& limits) : m_url(std::move(url)), m_limits(limits) {}
  std::string file_url(const std::string& key, const char* suffix) const;

  std::string m_url;
  RemoteLimits m_limits;
};

} // namespace ipu::cache
