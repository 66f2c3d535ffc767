// How the host feeds input streams (runtime/session/stream_feed.h): rows per replica, rows shared
// by a step's replicas, a whole input into every transfer, zeros or an error past the end, and
// streams the host does not feed.
#include <doctest/doctest.h>

#include <cstddef>
#include <span>
#include <vector>

#include "runtime/session/stream_feed.h"

namespace {

using ipu::StatusCode;
using ipu::session::StreamFeed;

// The next transfer of `stream`, `count` floats.
std::vector<float> next(StreamFeed& feed, uint32_t stream, size_t count,
                        StatusCode expected = StatusCode::kOk) {
  std::vector<float> out(count, -1.0f);
  const ipu::Status status = feed.pull(stream, std::as_writable_bytes(std::span(out)));
  CHECK(status.code() == expected);
  return out;
}

TEST_CASE("stream feed: each transfer takes the next rows, shared ones once per step") {
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> hyper = {10, 20};
  StreamFeed feed;
  feed.add(0, {std::as_bytes(std::span(rows)), 0, 1, false, false, "too many rows"});
  feed.add(1, {std::as_bytes(std::span(hyper)), 0, 2, false, false, "too many updates"}); // 2 replicas
  // Step 0, replicas 0 and 1; then step 1.
  CHECK(next(feed, 0, 2) == std::vector<float>{1, 2});
  CHECK(next(feed, 1, 1) == std::vector<float>{10});
  CHECK(next(feed, 0, 2) == std::vector<float>{3, 4});
  CHECK(next(feed, 1, 1) == std::vector<float>{10});
  CHECK(next(feed, 0, 2) == std::vector<float>{5, 6});
  CHECK(next(feed, 1, 1) == std::vector<float>{20});
  CHECK(feed.transfers(0) == 3);
  CHECK(feed.transfers(1) == 3);
  CHECK(feed.transfers(7) == 0);
}

TEST_CASE("stream feed: past the end, zeros for padding rows or an error") {
  const std::vector<float> values = {1, 2, 3};
  StreamFeed feed;
  feed.add(0, {std::as_bytes(std::span(values)), 1, 1, false, true, "unused"}); // starts at transfer 1
  CHECK(next(feed, 0, 2) == std::vector<float>{3, 0});
  CHECK(next(feed, 0, 2) == std::vector<float>{0, 0});
  feed.add(1, {std::as_bytes(std::span(values)), 0, 1, false, false, "more than an execution holds"});
  CHECK(next(feed, 1, 2) == std::vector<float>{1, 2});
  next(feed, 1, 2, StatusCode::kDataLoss);
}

TEST_CASE("stream feed: a whole input goes into every transfer, which must hold it exactly") {
  const std::vector<float> values = {4, 5};
  StreamFeed feed;
  feed.add(3, {std::as_bytes(std::span(values)), 0, 1, true, false, "does not match its input"});
  CHECK(next(feed, 3, 2) == values);
  CHECK(next(feed, 3, 2) == values);
  next(feed, 3, 3, StatusCode::kDataLoss);
  next(feed, 9, 2, StatusCode::kFailedPrecondition); // not fed
}

} // namespace
