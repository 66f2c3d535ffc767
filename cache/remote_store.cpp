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

  // Makes the request an upload of `size` bytes read by `read`. libcurl asks a PUT's server for
  // `Expect: 100-continue` and waits up to a second for an answer that a plain PUT server (nginx's
  // WebDAV, most object stores) never sends; an empty `Expect:` header leaves it out.
  template <typename ReadFunction> Status make_upload(ReadFunction read, void* data, curl_off_t size) {
    curl_slist* headers = m_lib->slist_append(nullptr, "Expect:");
    if (headers == nullptr) return io_error("cannot allocate an HTTP header list");
    m_headers.reset(headers);
    set(CURLOPT_HTTPHEADER, headers);
    set(CURLOPT_UPLOAD, 1L);
    set(CURLOPT_READFUNCTION, read);
    set(CURLOPT_READDATA, data);
    set(CURLOPT_INFILESIZE_LARGE, size);
    m_upload = true;
    return Status();
  }

  // Runs the transfer; OK only for a 2xx answer. A download's 404 is NotFound (a miss); an upload
  // answered otherwise than 2xx was refused by the server.
  Status perform(const std::string& url) {
    m_code = m_lib->easy_perform(m_handle.get());
    if (m_code != CURLE_OK) return io_error(url + ": " + m_lib->easy_strerror(m_code));
    long status = 0;
    m_lib->easy_getinfo(m_handle.get(), CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status <= 299) return Status();
    const std::string http = "HTTP " + std::to_string(status);
    if (m_upload) return io_error(url + ": the remote cache refused the upload (" + http + ")");
    if (status == 404) return not_found(url + ": not in the remote cache (" + http + ")");
    return io_error(url + ": " + http);
  }

private:
  struct Cleanup {
    const CurlLibrary* lib;
    void operator()(CURL* handle) const { lib->easy_cleanup(handle); }
    void operator()(curl_slist* list) const { lib->slist_free_all(list); }
  };
  Request(const CurlLibrary* lib, CURL* handle)
      : m_lib(lib), m_handle(handle, Cleanup{lib}), m_headers(nullptr, Cleanup{lib}) {}

  const CurlLibrary* m_lib;
  std::unique_ptr<CURL, Cleanup> m_handle;
  std::unique_ptr<curl_slist, Cleanup> m_headers; // outlives every perform() that sends them
  CURLcode m_code = CURLE_OK;
  bool m_upload = false;
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
  IPU_RETURN_IF_ERROR(request.make_upload(read_upload, &upload, static_cast<curl_off_t>(bytes.size())));
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
