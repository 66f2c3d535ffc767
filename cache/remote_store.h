// A remote executable cache over plain HTTP: GET and PUT of
// <url>/<key[0:2]>/<key>.ipuexe and <key>.manifest, as a WebDAV-enabled nginx or any static file
// server with PUT serves them (docs/cache.md, "Remote cache"). Nothing here trusts the server:
// callers compare the manifest byte for byte and verify the executable's frame and checksum.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace ipu::cache {

struct RemoteEntry {
  std::string manifest_text;
  std::string executable_bytes;
};

class RemoteStore {
 public:
  // `url` is http:// or https://; a trailing '/' is ignored. InvalidArgument for anything else.
  static StatusOr<RemoteStore> create(std::string url);

  const std::string& url() const { return m_url; }

  // The entry of `key` (a valid key): NotFound if the server answers 404 for either file,
  // IoError for anything else (connection refused, timeout, another HTTP status), naming the URL.
  StatusOr<RemoteEntry> fetch(const std::string& key) const;

  // Uploads the executable, then the manifest (the commit marker, as in the local store).
  Status put(const std::string& key, std::string_view manifest_text, std::string_view executable_bytes) const;

 private:
  explicit RemoteStore(std::string url) : m_url(std::move(url)) {}
  std::string file_url(const std::string& key, const char* suffix) const;

  std::string m_url;
};

}  // namespace ipu::cache
