#include <doctest/doctest.h>

#include "cli/number_text.h"

namespace ipu::cli {
namespace {

TEST_CASE("with_commas groups digits in threes") {
  CHECK(with_commas(uint64_t{0}) == "0");
  CHECK(with_commas(uint64_t{999}) == "999");
  CHECK(with_commas(uint64_t{1000}) == "1,000");
  CHECK(with_commas(uint64_t{17708725}) == "17,708,725");
  CHECK(with_commas(uint64_t{18446744073709551615u}) == "18,446,744,073,709,551,615");
}

TEST_CASE("rounded_with_commas rounds as %.0f does and keeps the sign") {
  CHECK(rounded_with_commas(0.0) == "0");
  CHECK(rounded_with_commas(1234.4) == "1,234");
  CHECK(rounded_with_commas(999.5) == "1,000"); // %.0f rounds half to even: 1000
  CHECK(rounded_with_commas(-1234.4) == "-1,234");
  CHECK(rounded_with_commas(-123.0) == "-123"); // no comma after the sign
  CHECK(rounded_with_commas(-0.4) == "0");
}

} // namespace
} // namespace ipu::cli
