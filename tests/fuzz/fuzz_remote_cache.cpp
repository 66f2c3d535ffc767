// libFuzzer target: a hostile remote cache server. The input is what the server sends back, raw
// bytes on the socket (status line, headers, body, or anything else): the answer to the GET of
// the manifest, then the answer to the GET of the executable. It goes the way of a remote lookup
// in `ipucc compile`: RemoteStore::fetch (libcurl, the caps on each body) and
// check_fetched_entry (the manifest compared byte for byte, the executable parsed, verified and
// checked against the key). Every input must end in an entry or an error, with no crash,
// undefined behaviour, hang, or allocation beyond a body's cap.
//
// Input layout: two bytes (little-endian) give the length of the manifest's answer (taken modulo
// what is left); the executable's answer is the rest. The manifest the client expects is the one
// the server sends when that parses as a canonical manifest, so the fuzzer reaches the executable
// checks; otherwise a fixed one, which no answer matches.
//
// The server is a thread of this process on an ephemeral port of 127.0.0.1. It answers each
// connection with the bytes for the file the request names and closes it, so a truncated answer
// ends at once.
//
// Seeds: tests/fuzz/corpus/remote_cache/ (tests/fuzz/make_remote_cache_corpus.sh writes them from
// entries of a real cache).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "cache/manifest.h"
#include "cache/remote_store.h"
#include "compile_cache/executable_key.h"

namespace {

// What the server sends for the next requests; set by the fuzzer's thread before each fetch.
struct Answers {
  std::mutex mutex;
  std::string manifest;
  std::string executable;
};

Answers& answers() {
  static Answers instance;
  return instance;
}

// Reads the request head (up to its blank line, or what fits in a few kilobytes) and sends the
// answer for the file it names.
void serve(int connection) {
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < sizeof buffer) {
    const ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  std::string answer;
  {
    std::lock_guard<std::mutex> lock(answers().mutex);
    const size_t line_end = request.find('\r');
    const std::string_view line = std::string_view(request).substr(0, line_end);
    answer = line.find(".manifest ") != std::string_view::npos ? answers().manifest : answers().executable;
  }
  for (size_t sent = 0; sent < answer.size();) {
    const ssize_t n = ::send(connection, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(connection, SHUT_WR);
  ::close(connection);
}

// Starts the server once; its URL.
const std::string& server_url() {
  static const std::string url = [] {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener, 16) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      std::abort();
    std::thread([listener] {
      for (;;) {
        const int connection = ::accept(listener, nullptr, nullptr);
        if (connection >= 0) serve(connection);
      }
    }).detach();
    return "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }();
  return url;
}

ipu::cache::Manifest fixed_manifest() {
  ipu::cache::Manifest manifest;
  manifest.set("key_schema", "fuzz");
  return manifest;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t manifest_length = (data[0] | (size_t{data[1]} << 8)) % (input.size() + 1);
  const std::string_view manifest_answer = input.substr(0, manifest_length);
  {
    std::lock_guard<std::mutex> lock(answers().mutex);
    answers().manifest.assign(manifest_answer);
    answers().executable.assign(input.substr(manifest_length));
  }
  // The body of the manifest's answer, if the answer is a plain one, is the expected manifest.
  ipu::cache::Manifest expected = fixed_manifest();
  const size_t body = manifest_answer.find("\r\n\r\n");
  if (body != std::string_view::npos) {
    auto parsed = ipu::cache::Manifest::parse(manifest_answer.substr(body + 4));
    if (parsed.ok()) expected = std::move(*parsed);
  }

  // Caps and timeouts small enough for a fuzzer, the behaviour the same as the defaults'.
  ipu::cache::RemoteLimits limits;
  limits.max_manifest_bytes = 4096;
  limits.max_executable_bytes = uint64_t{1} << 20;
  limits.connect_timeout_ms = 1000;
  limits.manifest_timeout_ms = 1000;
  limits.executable_timeout_ms = 1000;
  auto store = ipu::cache::RemoteStore::create(server_url(), limits);
  if (!store.ok()) std::abort();
  const std::string key = expected.key();
  auto fetched = store->fetch(key);
  if (!fetched.ok()) return 0;
  auto entry =
      ipu::compile_cache::check_fetched_entry(fetched->manifest_text, fetched->executable_bytes, expected,
                                              store->url() + "/" + key.substr(0, 2) + "/" + key);
  (void)entry;
  return 0;
}
