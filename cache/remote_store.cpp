#include "cache/remote_store.h"

#include <cstring>
#include <memory>

#include "cache/curl_library.h"
#include "cache/manifest.h"

namespace ipu::cache {
namespace {

// A remote cache is an accelerator: a slow or dead server must cost seconds, not minutes.
constexpr long kConnectTimeoutMs = 2000;
constexpr long kTotalTimeoutMs = 60000;
// Larger downloads are refused (the executable format's own bound is 4 GiB of payload; cached
// executables are far smaller).
constexpr size_t kMaxDownloadBytes = size_t{1} << 30;

// An easy handle with the options every request shares; it remembers its library for cleanup.
class Request {
 public:
  static StatusOr<Request> create(const std::string& url) {
    IPU_ASSIGN_OR_RETURN(const CurlLibrary* lib, curl_library());
    CURL* handle = lib->easy_init();
    if (handle == nullptr) return io_error(url + ": cannot initialise libcurl");
    Request request(lib, handle);
    request.set(CURLOPT_URL, url.c_str());
    request.set(CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
    request.set(CURLOPT_TIMEOUT_MS, kTotalTimeoutMs);
    request.set(CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM
    request.set(CURLOPT_PROTOCOLS_STR, "http,https");
    return request;
  }

  template <typename Value>
  void set(CURLoption option, Value value) {
    m_lib->easy_setopt(m_handle.get(), option, value);
  }

  // Runs the transfer; OK only for a 2xx answer. 404 is NotFound.
  Status perform(const std::string& url) {
    CURLcode code = m_lib->easy_perform(m_handle.get());
    if (code != CURLE_OK) return io_error(url + ": " + m_lib->easy_strerror(code));
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
};

size_t append_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * count > kMaxDownloadBytes) return 0;  // makes curl fail the transfer
  body->append(data, size * count);
  return size * count;
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

StatusOr<std::string> get(const std::string& url) {
  IPU_ASSIGN_OR_RETURN(Request request, Request::create(url));
  std::string body;
  request.set(CURLOPT_WRITEFUNCTION, append_body);
  request.set(CURLOPT_WRITEDATA, &body);
  IPU_RETURN_IF_ERROR(request.perform(url));
  return body;
}

Status put_file(const std::string& url, std::string_view bytes) {
  IPU_ASSIGN_OR_RETURN(Request request, Request::create(url));
  Upload upload{bytes};
  request.set(CURLOPT_UPLOAD, 1L);
  request.set(CURLOPT_READFUNCTION, read_upload);
  request.set(CURLOPT_READDATA, &upload);
  request.set(CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(bytes.size()));
  return request.perform(url);
}

}  // namespace

StatusOr<RemoteStore> RemoteStore::create(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return invalid_argument("remote cache URL '" + url + "' must start with http:// or https://");
  }
  return RemoteStore(std::move(url));
}

std::string RemoteStore::file_url(const std::string& key, const char* suffix) const {
  return m_url + "/" + key.substr(0, 2) + "/" + key + suffix;
}

StatusOr<RemoteEntry> RemoteStore::fetch(const std::string& key) const {
  if (!is_valid_key(key)) return invalid_argument("'" + key + "' is not a cache key");
  RemoteEntry entry;
  // The manifest first: it is small, and a miss ends there.
  IPU_ASSIGN_OR_RETURN(entry.manifest_text, get(file_url(key, ".manifest")));
  IPU_ASSIGN_OR_RETURN(entry.executable_bytes, get(file_url(key, ".ipuexe")));
  return entry;
}

Status RemoteStore::put(const std::string& key, std::string_view manifest_text, std::string_view executable_bytes) const {
  if (!is_valid_key(key)) return invalid_argument("'" + key + "' is not a cache key");
  IPU_RETURN_IF_ERROR(put_file(file_url(key, ".ipuexe"), executable_bytes));
  return put_file(file_url(key, ".manifest"), manifest_text);
}

}  // namespace ipu::cache
