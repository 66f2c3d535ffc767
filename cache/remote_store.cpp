#include "cache/remote_store.h"

#include <curl/curl.h>

#include <cstring>
#include <memory>

#include "cache/manifest.h"

namespace ipu::cache {
namespace {

// A remote cache is an accelerator: a slow or dead server must cost seconds, not minutes.
constexpr long kConnectTimeoutMs = 2000;
constexpr long kTotalTimeoutMs = 60000;
// Larger downloads are refused (the executable format's own bound is 4 GiB of payload; cached
// executables are far smaller).
constexpr size_t kMaxDownloadBytes = size_t{1} << 30;

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

CurlHandle new_handle(const std::string& url) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  CurlHandle curl(initialised ? curl_easy_init() : nullptr);
  if (!curl) return curl;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, kTotalTimeoutMs);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  return curl;
}

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

// Runs the transfer; OK only for a 2xx answer. 404 is NotFound.
Status perform(CURL* curl, const std::string& url) {
  CURLcode code = curl_easy_perform(curl);
  if (code != CURLE_OK) return io_error(url + ": " + curl_easy_strerror(code));
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status == 404) return not_found(url + ": not in the remote cache (HTTP 404)");
  if (status < 200 || status > 299) return io_error(url + ": HTTP " + std::to_string(status));
  return Status();
}

StatusOr<std::string> get(const std::string& url) {
  CurlHandle curl = new_handle(url);
  if (!curl) return io_error(url + ": cannot initialise libcurl");
  std::string body;
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  IPU_RETURN_IF_ERROR(perform(curl.get(), url));
  return body;
}

Status put_file(const std::string& url, std::string_view bytes) {
  CurlHandle curl = new_handle(url);
  if (!curl) return io_error(url + ": cannot initialise libcurl");
  Upload upload{bytes};
  curl_easy_setopt(curl.get(), CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_READFUNCTION, read_upload);
  curl_easy_setopt(curl.get(), CURLOPT_READDATA, &upload);
  curl_easy_setopt(curl.get(), CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(bytes.size()));
  return perform(curl.get(), url);
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
