#include "cache/remote_store.h"

#include <cstring>
#include <memory>

#include "cache/curl_library.h"
#include "cache/manifest.h"

namespace ipu::cache {
namespace {

// An easy handle with the options every request shares; it remembers its library for cleanup.
class Request {
public:
  static StatusOr<Request> create(const std::string& url, long connect_timeout_ms, long total_timeout_ms) {
    IPU_ASSIGN_OR_RETURN(const CurlLibrary* lib, curl_library());
    CURL* handle = lib->easy_init();
    if (handle == nullptr) return io_error(url + ": cannot initialise libcurl");
    Request request(lib, handle);
    request.set(CURLOPT_URL, url.c_str());
    request.set(CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    request.set(CURLOPT_TIMEOUT_MS, total_timeout_ms);
    request.set(CURLOPT_NOSIGNAL, 1L); // timeouts without SIGALRM
    request.set(CURLOPT_PROTOCOLS_STR, "http,https");
    return request;
  }

  template <typename Value> void set(CURLoption option, Value value) {
    m_lib->easy_setopt(m_handle.get(), option, value);
  }

  // libcurl's result of the last perform().
  CURLcode code() const { return m_code; }

  // Runs the transfer; OK only for a 2xx answer. 404 is NotFound.
  Status perform(const std::string& url) {
    m_code = m_lib->easy_perform(m_handle.get());
    if (m_code != CURLE_OK) return io_error(url + ": " + m_lib->easy_strerror(m_code));
    long status = 0;
    m_lib->easy_getinfo(m_handle.get(), CURLINFO_RESPONSE_CODE, &status);
    if (status == 404) return not_found(url + ": not in the remote cache (HTTP 404)");
    if (status < 200 || status > 299) return io_error(url + ": HTTP " + std::to_string(status));
    return Status();
  }

private:
  struct Cleanup {
    const CurlLibrary* lib;
    void operator()(CURL* handle) const { lib->easy_cleanup(handle); }
  };
  Request(const CurlLibrary* lib, CURL* handle) : m_lib(lib), m_handle(handle, Cleanup{lib}) {}

  const CurlLibrary* m_lib;
  std::unique_ptr<CURL, Cleanup> m_handle;
  CURLcode m_code = CURLE_OK;
};

// A response body, refused past its cap while it arrives: an endless or huge body costs what
// the cap allows, not what the server sends.
struct Body {
  std::string text;
  uint64_t cap = 0;
  bool over_cap = false;
};

size_t append_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t n = size * count;
  if (body->text.size() + n > body->cap) {
    body->over_cap = true;
    return 0; // makes libcurl end the transfer (CURLE_WRITE_ERROR)
  }
  body->text.append(data, n);
  return n;
}

struct Upload {
  std::string_view rest;
};

size_t read_upload(char* buffer, size_t size, size_t count, void* user) {
  auto* upload = static_cast<Upload*>(user);
  const size_t n = std::min(size * count, upload->rest.size());
  std::memcpy(buffer, upload->rest.data(), n);
  upload->rest.remove_prefix(n);
  return n;
}

// GET of `url`, whose body may hold at most `cap` bytes (`what` names the file in the error).
StatusOr<std::string> get(const std::string& url, uint64_t cap, const char* what, long connect_timeout_ms,
                          long total_timeout_ms) {
  IPU_ASSIGN_OR_RETURN(Request request, Request::create(url, connect_timeout_ms, total_timeout_ms));
  Body body;
  body.cap = cap;
  request.set(CURLOPT_WRITEFUNCTION, append_body);
  request.set(CURLOPT_WRITEDATA, &body);
  // A Content-Length over the cap is refused before the body is read.
  request.set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(cap));
  Status status = request.perform(url);
  if (body.over_cap || request.code() == CURLE_FILESIZE_EXCEEDED) {
    return io_error(url + ": the answer is larger than " + std::to_string(cap) + " bytes, the cap for " +
                    what + "; not read further");
  }
  IPU_RETURN_IF_ERROR(status);
  return std::move(body.text);
}

Status put_file(const std::string& url, std::string_view bytes, long connect_timeout_ms,
                long total_timeout_ms) {
  IPU_ASSIGN_OR_RETURN(Request request, Request::create(url, connect_timeout_ms, total_timeout_ms));
  Upload upload{bytes};
  request.set(CURLOPT_UPLOAD, 1L);
  request.set(CURLOPT_READFUNCTION, read_upload);
  request.set(CURLOPT_READDATA, &upload);
  request.set(CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(bytes.size()));
  return request.perform(url);
}

} // namespace

StatusOr<RemoteStore> RemoteStore::create(std::string url, const RemoteLimits& limits) {
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return invalid_argument("remote cache URL '" + url + "' must start with http:// or https://");
  }
  return RemoteStore(std::move(url), limits);
}

std::string RemoteStore::file_url(const std::string& key, const char* suffix) const {
  return m_url + "/" + key.substr(0, 2) + "/" + key + suffix;
}

StatusOr<RemoteEntry> RemoteStore::fetch(const std::string& key) const {
  if (!is_valid_key(key)) return invalid_argument("'" + key + "' is not a cache key");
  RemoteEntry entry;
  // The manifest first: it is small, and a miss ends there.
  const RemoteLimits& l = m_limits;
  IPU_ASSIGN_OR_RETURN(entry.manifest_text,
                       get(file_url(key, ".manifest"), l.max_manifest_bytes, "a cache manifest",
                           l.connect_timeout_ms, l.manifest_timeout_ms));
  IPU_ASSIGN_OR_RETURN(entry.executable_bytes,
                       get(file_url(key, ".ipuexe"), l.max_executable_bytes, "an executable",
                           l.connect_timeout_ms, l.executable_timeout_ms));
  return entry;
}

Status RemoteStore::put(const std::string& key, std::string_view manifest_text,
                        std::string_view executable_bytes) const {
  if (!is_valid_key(key)) return invalid_argument("'" + key + "' is not a cache key");
  const RemoteLimits& l = m_limits;
  IPU_RETURN_IF_ERROR(
      put_file(file_url(key, ".ipuexe"), executable_bytes, l.connect_timeout_ms, l.executable_timeout_ms));
  return put_file(file_url(key, ".manifest"), manifest_text, l.connect_timeout_ms, l.manifest_timeout_ms);
}

} // namespace ipu::cache
