// sample_shape_fits: which data set sample shapes may feed a model input.
#include <doctest/doctest.h>

#include "runtime/session/session.h"

namespace {

using ipu::session::sample_shape_fits;

TEST_CASE("session::sample_shape_fits accepts the same bytes in another shape only without reordering") {
  CHECK(sample_shape_fits({28, 28, 1}, {28, 28, 1}));
  // Flat either way round.
  CHECK(sample_shape_fits({784}, {28, 28, 1}));
  CHECK(sample_shape_fits({28, 28, 1}, {784}));
  // Size-1 axes dropped: HWC with one channel is CHW with one channel.
  CHECK(sample_shape_fits({28, 28, 1}, {1, 28, 28}));
  CHECK(sample_shape_fits({1, 28, 28}, {28, 1, 28}));
  // Same size but a different order of the real axes moves bytes: refused.
  CHECK_FALSE(sample_shape_fits({28, 14, 2}, {2, 28, 14}));
  CHECK_FALSE(sample_shape_fits({28, 28, 3}, {3, 28, 28}));
  // Different sizes never fit.
  CHECK_FALSE(sample_shape_fits({28, 28, 1}, {1, 28, 27}));
  CHECK_FALSE(sample_shape_fits({783}, {28, 28, 1}));
}

} // namespace
