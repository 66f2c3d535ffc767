#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cache/remote_store.h"
#include "tests/unit/test_strings.h"

using ipu::StatusCode;
using ipu::cache::RemoteLimits;
using ipu::cache::RemoteStore;
using ipu::testing::contains;

namespace {

const std::string kKey(64, 'a');

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// A hostile or broken HTTP server on 127.0.0.1 for one test: each connection's request path and
// head (request line and headers) go to the handler, which answers on the socket; the connection
// is then closed.
class TestServer {
public:
  using Handler = std::function<void(int fd, const std::string& path, const std::string& head)>;

  explicit TestServer(Handler handler) : m_handler(std::move(handler)) {
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(m_listen >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(m_listen, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(m_listen, 8) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(m_listen, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    m_port = ntohs(address.sin_port);
    m_thread = std::thread([this] { serve(); });
  }
  ~TestServer() {
    ::shutdown(m_listen, SHUT_RDWR); // wakes the accept
    m_thread.join();
    ::close(m_listen);
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/cache"; }

private:
  void serve() {
    while (true) {
      int fd = ::accept(m_listen, nullptr, nullptr);
      if (fd < 0) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      const std::string head = request.substr(0, request.find("\r\n\r\n"));
      const size_t start = head.find(' ') + 1;
      m_handler(fd, head.substr(start, head.find(' ', start) - start), head);
      ::close(fd);
    }
  }

  Handler m_handler;
  int m_listen = -1;
  int m_port = 0;
  std::thread m_thread;
};

// Sends an endless body (no Content-Length: it ends when the connection does) until the client
// hangs up, or a safety limit far above any cap; counts what was sent.
void send_endless_body(int fd, std::atomic<uint64_t>& sent) {
  if (!send_all(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")) return;
  const std::string chunk(64 << 10, 'x');
  while (sent < (uint64_t{256} << 20) && send_all(fd, chunk))
    sent += chunk.size();
}

void send_body(int fd, const std::string& body) {
  send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                   "\r\nConnection: close\r\n\r\n" + body);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TEST_CASE("remote store refuses a manifest past its cap without reading the rest") {
  std::atomic<uint64_t> sent{0};
  SUBCASE("an endless body") {
    TestServer server([&](int fd, const std::string&, const std::string&) { send_endless_body(fd, sent); });
    auto remote = RemoteStore::create(server.url());
    REQUIRE(remote.ok());
    const auto start = std::chrono::steady_clock::now();
    auto fetched = remote->fetch(kKey);
    REQUIRE_FALSE(fetched.ok());
    CHECK(fetched.status().code() == StatusCode::kIoError);
    const std::string message = fetched.status().message();
    CAPTURE(message);
    CHECK(contains(message, server.url() + "/aa/" + kKey + ".manifest: "));
    CHECK(contains(message, "larger than 65536 bytes, the cap for a cache manifest; not read further"));
    CHECK(seconds_since(start) < 5);
    // The socket buffers hold a few MiB; the server never got to send much more than that.
    CHECK(sent < (uint64_t{32} << 20));
  }
  SUBCASE("a Content-Length over the cap") {
    TestServer server([&](int fd, const std::string&, const std::string&) {
      if (send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\nConnection: close\r\n\r\n")) {
        send_endless_body(fd, sent);
      }
    });
    auto remote = RemoteStore::create(server.url());
    REQUIRE(remote.ok());
    auto fetched = remote->fetch(kKey);
    REQUIRE_FALSE(fetched.ok());
    CAPTURE(fetched.status().message());
    CHECK(contains(fetched.status().message(), "larger than 65536 bytes, the cap for a cache manifest"));
    CHECK(sent < (uint64_t{32} << 20));
  }
}

TEST_CASE("remote store caps an executable at the caller's limit") {
  std::atomic<uint64_t> sent{0};
  TestServer server([&](int fd, const std::string& path, const std::string&) {
    if (path.ends_with(".manifest")) {
      send_body(fd, "a=b\n");
    } else {
      send_endless_body(fd, sent);
    }
  });
  RemoteLimits limits;
  limits.max_executable_bytes = 100000;
  auto remote = RemoteStore::create(server.url(), limits);
  REQUIRE(remote.ok());
  auto fetched = remote->fetch(kKey);
  REQUIRE_FALSE(fetched.ok());
  CAPTURE(fetched.status().message());
  CHECK(contains(fetched.status().message(), server.url() + "/aa/" + kKey + ".ipuexe: "));
  CHECK(contains(fetched.status().message(), "larger than 100000 bytes, the cap for an executable"));
}

TEST_CASE("remote store fetches an entry within its caps") {
  TestServer server([&](int fd, const std::string& path, const std::string&) {
    send_body(fd, path.ends_with(".manifest") ? std::string(65536, 'm') : std::string(100000, 'e'));
  });
  RemoteLimits limits;
  limits.max_executable_bytes = 100000;
  auto remote = RemoteStore::create(server.url(), limits);
  REQUIRE(remote.ok());
  auto fetched = remote->fetch(kKey);
  REQUIRE(fetched.ok());
  CHECK(fetched->manifest_text == std::string(65536, 'm'));
  CHECK(fetched->executable_bytes.size() == 100000);
}

TEST_CASE("remote store gives up on a server that does not answer") {
  TestServer server([&](int fd, const std::string&, const std::string&) {
    char byte;
    (void)::recv(fd, &byte, 1, 0); // until the client gives up and closes
  });
  RemoteLimits limits;
  limits.manifest_timeout_ms = 300;
  auto remote = RemoteStore::create(server.url(), limits);
  REQUIRE(remote.ok());
  const auto start = std::chrono::steady_clock::now();
  auto fetched = remote->fetch(kKey);
  REQUIRE_FALSE(fetched.ok());
  CHECK(fetched.status().code() == StatusCode::kIoError);
  CAPTURE(fetched.status().message());
  CHECK(contains(fetched.status().message(), ".manifest: Timeout was reached"));
  CHECK(seconds_since(start) < 3);
}

TEST_CASE("remote store uploads without waiting for 100-continue") {
  std::string heads;
  std::mutex heads_mutex;
  TestServer server([&](int fd, const std::string&, const std::string& head) {
    {
      std::lock_guard<std::mutex> lock(heads_mutex);
      heads += head + "\n";
    }
    send_all(fd, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    // Take the rest of the body before the server closes: a close with bytes unread resets the
    // connection, and the client could meet the reset before the answer (seen under ASan).
    ::shutdown(fd, SHUT_WR);
    char sink[1 << 16];
    while (::recv(fd, sink, sizeof sink, 0) > 0) {
    }
  });
  auto remote = RemoteStore::create(server.url());
  REQUIRE(remote.ok());
  // Over 1 MiB: the size from which libcurl asks for 100-continue on every version.
  REQUIRE(remote->put(kKey, "a=b\n", std::string(2 << 20, 'e')).ok());
  std::lock_guard<std::mutex> lock(heads_mutex);
  CAPTURE(heads);
  CHECK(contains(heads, "PUT /cache/aa/" + kKey + ".ipuexe HTTP/1.1"));
  CHECK(contains(heads, "PUT /cache/aa/" + kKey + ".manifest HTTP/1.1"));
  CHECK_FALSE(contains(heads, "Expect:"));
}

TEST_CASE("remote store reports a refused upload as refused, not as a miss") {
  for (const int status : {403, 404, 405}) {
    CAPTURE(status);
    TestServer server([&](int fd, const std::string&, const std::string&) {
      send_all(fd, "HTTP/1.1 " + std::to_string(status) +
                       " No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    auto remote = RemoteStore::create(server.url());
    REQUIRE(remote.ok());
    const ipu::Status put = remote->put(kKey, "a=b\n", "executable");
    REQUIRE_FALSE(put.ok());
    CHECK(put.code() == StatusCode::kIoError);
    CAPTURE(put.message());
    CHECK(contains(put.message(), server.url() + "/aa/" + kKey +
                                      ".ipuexe: the remote cache refused the upload (HTTP " +
                                      std::to_string(status) + ")"));
    CHECK_FALSE(contains(put.message(), "not in the remote cache"));
  }
}
