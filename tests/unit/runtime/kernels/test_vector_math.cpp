// The vectorised exp and erf against the C library in double precision: within 1 ULP over a sweep
// that crosses underflow, overflow and the special values, for every tail length, in place, and
// the same whichever range an element is computed in; on SSE2 and, where the CPU has them, AVX2
// and AVX-512.
// libm_exp and libm_sigmoid bit for bit against expf: on a sample of floats of every exponent in
// the suite, and on every float in a test skipped by default (about 15 minutes). exp and erf with
// AVX-512 against AVX2 bit for bit: on a sample in the suite, on every float when asked. Row sums
// in double bit for bit against a scalar loop. Relu and the 2×2 stride-2 maximum bit for bit
// and Relu's gradient against their scalar comparisons, NaNs and signed zeros included. Channel
// blocks of 16 to planes and back against the layouts' definition, writing nothing else, and
// with Relu's clamp on the way out.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/kernels/vector_math.h"

namespace {

using ipu::kernels::best_vector_isa;
using ipu::kernels::block16;
using ipu::kernels::libm_exp;
using ipu::kernels::libm_sigmoid;
using ipu::kernels::max_pool_2x2_cols_stride2;
using ipu::kernels::PoolRows;
using ipu::kernels::sum_rows_in_double;
using ipu::kernels::unblock16;
using ipu::kernels::vector_erf;
using ipu::kernels::vector_exp;
using ipu::kernels::vector_relu;
using ipu::kernels::vector_relu_grad;
using ipu::kernels::VectorIsa;

using VectorFn = void (*)(const float*, float*, int64_t, VectorIsa);

// The instruction sets this CPU can run the functions with.
std::vector<VectorIsa> isas() {
  switch (best_vector_isa()) {
  case VectorIsa::kAvx512:
    return {VectorIsa::kSse2, VectorIsa::kAvx2Fma, VectorIsa::kAvx512};
  case VectorIsa::kAvx2Fma:
    return {VectorIsa::kSse2, VectorIsa::kAvx2Fma};
  case VectorIsa::kSse2:
    break;
  }
  return {VectorIsa::kSse2};
}

// Values from -120 to 120 in uneven steps, around 0 densely, and the special values.
std::vector<float> sweep() {
  std::vector<float> x;
  for (float t = -120.0f; t <= 120.0f; t += 0.0371f)
    x.push_back(t);
  for (float t = -1e-3f; t <= 1e-3f; t += 1.7e-6f)
    x.push_back(t);
  const float inf = std::numeric_limits<float>::infinity();
  for (float t :
       {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, 88.73f, -87.3f, -103.9f, -104.0f, 3.9f, -3.9f, 9.0f, -9.0f, inf,
        -inf, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
        std::numeric_limits<float>::lowest(), std::numeric_limits<float>::denorm_min()}) {
    x.push_back(t);
  }
  return x;
}

// |got - want| in units of the last place of float at want (the smallest subnormal near 0).
double ulps(float got, double want) {
  const float rounded = static_cast<float>(want);
  const float up = std::nextafter(std::fabs(rounded), std::numeric_limits<float>::infinity());
  const double ulp = static_cast<double>(up) - std::fabs(static_cast<double>(rounded));
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

void check_within_one_ulp(VectorFn fn, VectorIsa isa, double (*reference)(double), const char* name) {
  const std::vector<float> x = sweep();
  std::vector<float> y(x.size());
  fn(x.data(), y.data(), static_cast<int64_t>(x.size()), isa);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = reference(x[i]);
    INFO(name << "(" << x[i] << ") with isa " << static_cast<int>(isa) << ": got " << y[i] << ", want "
              << want);
    if (std::isnan(want)) {
      CHECK(std::isnan(y[i]));
    } else if (std::fabs(want) > std::numeric_limits<float>::max()) { // overflows float
      CHECK(y[i] ==
            std::copysign(std::numeric_limits<float>::infinity(), static_cast<float>(want > 0 ? 1 : -1)));
    } else {
      CHECK(ulps(y[i], want) <= 1.0);
    }
  }
}

// Each element's result is bitwise the same computed alone, within any range, and in place.
void check_position_independent(VectorFn fn, VectorIsa isa) {
  std::vector<float> x;
  for (int i = 0; i < 37; ++i)
    x.push_back(-4.0f + 0.23f * static_cast<float>(i));
  std::vector<float> whole(x.size());
  fn(x.data(), whole.data(), static_cast<int64_t>(x.size()), isa);
  for (size_t begin = 0; begin < x.size(); ++begin) {
    for (size_t n = 0; begin + n <= x.size() && n <= 9; ++n) {
      std::vector<float> part(x.begin() + static_cast<std::ptrdiff_t>(begin),
                              x.begin() + static_cast<std::ptrdiff_t>(begin + n));
      fn(part.data(), part.data(), static_cast<int64_t>(n), isa); // in place
      INFO("range [" << begin << ", " << begin + n << ") with isa " << static_cast<int>(isa));
      // An empty part has no data pointer to compare (memcmp must not see a null one).
      CHECK((n == 0 || std::memcmp(part.data(), whole.data() + begin, n * sizeof(float)) == 0));
    }
  }
}

// Floats whose bit patterns run from `first` in steps of `stride` (every sign, exponent and
// specials among them when the stride is odd and small enough), and their expf and sigmoid
// through the scalar C library; the libm_ functions must give the same bits, in place too.
void check_libm_bitwise(uint64_t first, uint64_t stride, uint64_t count, VectorIsa isa) {
  std::vector<float> x(count), exp_want(count), sigmoid_want(count);
  for (uint64_t i = 0; i < count; ++i) {
    x[i] = std::bit_cast<float>(static_cast<uint32_t>(first + i * stride));
    exp_want[i] = std::exp(x[i]);
    sigmoid_want[i] = 1.0f / (1.0f + std::exp(-x[i]));
  }
  std::vector<float> exp_got(count), sigmoid_got = x;
  libm_exp(x.data(), exp_got.data(), static_cast<int64_t>(count), isa);
  libm_sigmoid(sigmoid_got.data(), sigmoid_got.data(), static_cast<int64_t>(count), isa);
  size_t exp_wrong = 0, sigmoid_wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
    if (bits(exp_got[i]) != bits(exp_want[i])) {
      if (exp_wrong++ < 5)
        FAIL_CHECK("libm_exp(" << x[i] << ") = " << exp_got[i] << ", expf " << exp_want[i]);
    }
    if (bits(sigmoid_got[i]) != bits(sigmoid_want[i])) {
      if (sigmoid_wrong++ < 5)
        FAIL_CHECK("libm_sigmoid(" << x[i] << ") = " << sigmoid_got[i] << ", scalar " << sigmoid_want[i]);
    }
  }
  CHECK(exp_wrong == 0);
  CHECK(sigmoid_wrong == 0);
}

// exp and erf with AVX-512 give AVX2's bits for floats whose bit patterns run from `first` in
// steps of `stride`, NaNs' payloads included.
void check_avx512_as_avx2(uint64_t first, uint64_t stride, uint64_t count) {
  std::vector<float> x(count);
  for (uint64_t i = 0; i < count; ++i)
    x[i] = std::bit_cast<float>(static_cast<uint32_t>(first + i * stride));
  for (VectorFn fn : {VectorFn{vector_exp}, VectorFn{vector_erf}}) {
    std::vector<float> wide(count), narrow(count);
    fn(x.data(), wide.data(), static_cast<int64_t>(count), VectorIsa::kAvx512);
    fn(x.data(), narrow.data(), static_cast<int64_t>(count), VectorIsa::kAvx2Fma);
    size_t differ = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (std::bit_cast<uint32_t>(wide[i]) != std::bit_cast<uint32_t>(narrow[i]) && differ++ < 5)
        FAIL_CHECK((fn == vector_exp ? "exp(" : "erf(")
                   << x[i] << "): " << wide[i] << " with AVX-512, " << narrow[i] << " with AVX2");
    }
    CHECK(differ == 0);
  }
}

} // namespace

TEST_CASE("vector_math: AVX-512 gives AVX2's bits, on a sample of every exponent") {
  if (best_vector_isa() != VectorIsa::kAvx512) return; // nothing to compare on this CPU
  check_avx512_as_avx2(0, 1021, (uint64_t{1} << 32) / 1021);
  check_avx512_as_avx2(0x3f800000u - 4096, 1, 8192);
  check_avx512_as_avx2(0x42ae0000u, 1, 40000); // near overflow and underflow
  check_avx512_as_avx2(0xc2ae0000u, 1, 40000);
}

TEST_CASE("vector_math: AVX-512 gives AVX2's bits for every float" * doctest::skip()) {
  if (best_vector_isa() != VectorIsa::kAvx512) return;
  for (uint64_t first = 0; first < (uint64_t{1} << 32); first += uint64_t{1} << 26)
    check_avx512_as_avx2(first, 1, uint64_t{1} << 26);
}

TEST_CASE("vector_math: libm_exp and libm_sigmoid give expf's bits, on a sample of every exponent") {
  for (VectorIsa isa : isas()) {
    CAPTURE(static_cast<int>(isa));
    check_libm_bitwise(0, 1021, (uint64_t{1} << 32) / 1021, isa); // 4.2 M floats, every sign and exponent
    check_libm_bitwise(0x3f800000u - 4096, 1, 8192, isa);         // around 1 (x near 0: near ties)
    check_libm_bitwise(0xbf800000u - 4096, 1, 8192, isa);
    check_libm_bitwise(0x42ae0000u, 1, 40000, isa); // near 87 (underflow and overflow edges)
    check_libm_bitwise(0xc2ae0000u, 1, 40000, isa);
    check_libm_bitwise(0, 1, 3, isa);               // tails shorter than a vector
    check_libm_bitwise(0x3f000000u, 4099, 27, isa); // 16 lanes, then 8 (AVX2's), then 3
  }
}

TEST_CASE("vector_math: libm_exp equals expf for every float" * doctest::skip()) {
  for (VectorIsa isa : isas()) {
    CAPTURE(static_cast<int>(isa));
    for (uint64_t first = 0; first < (uint64_t{1} << 32); first += uint64_t{1} << 26)
      check_libm_bitwise(first, 1, uint64_t{1} << 26, isa);
  }
}

TEST_CASE("vector_math: exp is within 1 ULP of the exact result, specials included") {
  for (VectorIsa isa : isas())
    check_within_one_ulp(
        vector_exp, isa, [](double t) { return std::exp(t); }, "exp");
}

TEST_CASE("vector_math: erf is within 1 ULP of the exact result, specials included") {
  for (VectorIsa isa : isas())
    check_within_one_ulp(
        vector_erf, isa, [](double t) { return std::erf(t); }, "erf");
}

TEST_CASE("vector_math: results do not depend on the range or its tail length, in place or not") {
  for (VectorIsa isa : isas()) {
    check_position_independent(vector_exp, isa);
    check_position_independent(vector_erf, isa);
  }
}

TEST_CASE("vector_math: an empty range writes nothing") {
  for (VectorIsa isa : isas()) {
    float y = 7.0f;
    vector_exp(nullptr, &y, 0, isa);
    vector_erf(nullptr, &y, 0, isa);
    CHECK(y == 7.0f);
  }
}

TEST_CASE("vector_math: row sums in double give a scalar loop's bits for every column count") {
  // Values whose sums round in double: wide exponents and both signs, with zeros of both signs,
  // infinities, a NaN and subnormals among them.
  std::vector<float> values;
  for (int i = 0; i < 64; ++i)
    values.push_back(std::ldexp(static_cast<float>((i * 7919) % 1000 + 1) / 997.0f, (i * 37) % 120 - 60) *
                     (i % 3 == 0 ? -1.0f : 1.0f));
  for (float special :
       {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(), -1e-40f})
    values.push_back(special);
  constexpr int64_t kStride = 41;
  for (VectorIsa isa : isas()) {
    for (int64_t count = 0; count <= 5; ++count) {
      for (int64_t n = 0; n <= 40; ++n) {
        std::vector<float> x(static_cast<size_t>(std::max<int64_t>(count, 1) * kStride));
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = values[(i * 13 + static_cast<size_t>(count + n)) % values.size()];
        std::vector<double> sums(static_cast<size_t>(n) + 1, 99.0);
        sum_rows_in_double(x.data(), kStride, count, n, sums.data(), isa);
        for (int64_t c = 0; c < n; ++c) {
          double expected = 0.0;
          for (int64_t j = 0; j < count; ++j)
            expected += x[static_cast<size_t>(j * kStride + c)];
          const double got = sums[static_cast<size_t>(c)];
          INFO("isa " << static_cast<int>(isa) << ", count " << count << ", n " << n << ", column " << c);
          if (std::isnan(expected))
            CHECK(std::isnan(got));
          else
            CHECK(std::bit_cast<uint64_t>(got) == std::bit_cast<uint64_t>(expected));
        }
        CHECK(sums[static_cast<size_t>(n)] == 99.0); // nothing past the columns
      }
    }
  }
}

// Values where a comparison's order shows: zeros of both signs, NaNs of two payloads (which one
// survives shows which tap was kept), infinities, subnormals, and repeats.
std::vector<float> selection_values() {
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0xffc00002u);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials{0.0f,   -0.0f,   nan_a, nan_b, inf,  -inf,
                                    1e-40f, -1e-40f, 1.0f,  -1.0f, 2.5f, 1.0f};
  std::vector<float> x;
  for (size_t i = 0; i < 500; ++i)
    x.push_back(specials[(i * 7 + i / 5) % specials.size()]);
  return x;
}

bool same_bits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST_CASE("vector_math: relu gives x > 0 ? x : 0 bit for bit, for every tail length and in place") {
  const std::vector<float> x = selection_values();
  for (VectorIsa isa : isas()) {
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<float> y(static_cast<size_t>(n) + 1, 7.0f), in_place(x.begin() + 3, x.begin() + 3 + n);
      vector_relu(x.data() + 3, y.data(), n, isa);
      vector_relu(in_place.data(), in_place.data(), n, isa);
      for (int64_t i = 0; i < n; ++i) {
        const float t = x[static_cast<size_t>(3 + i)];
        INFO("isa " << static_cast<int>(isa) << ", n " << n << ", x " << t);
        CHECK(same_bits(y[static_cast<size_t>(i)], t > 0.0f ? t : 0.0f));
        CHECK(same_bits(in_place[static_cast<size_t>(i)], t > 0.0f ? t : 0.0f));
      }
      CHECK(y[static_cast<size_t>(n)] == 7.0f); // nothing past the range
    }
  }
}

TEST_CASE("vector_math: relu_grad gives y > 0 ? dy : 0 bit for bit, for every tail length and in place") {
  const std::vector<float> values = selection_values();
  for (VectorIsa isa : isas()) {
    for (int64_t n = 0; n <= 40; ++n) {
      const float* y = values.data() + 5;
      const float* dy = values.data() + 17 + n; // against other values for each n
      std::vector<float> dx(static_cast<size_t>(n) + 1, 7.0f), in_place(dy, dy + n);
      vector_relu_grad(y, dy, dx.data(), n, isa);
      vector_relu_grad(y, in_place.data(), in_place.data(), n, isa);
      for (int64_t i = 0; i < n; ++i) {
        const float want = y[i] > 0.0f ? dy[i] : 0.0f;
        INFO("isa " << static_cast<int>(isa) << ", n " << n << ", y " << y[i] << ", dy " << dy[i]);
        CHECK(same_bits(dx[static_cast<size_t>(i)], want));
        CHECK(same_bits(in_place[static_cast<size_t>(i)], want));
      }
      CHECK(dx[static_cast<size_t>(n)] == 7.0f);
    }
  }
}

TEST_CASE("vector_math: the 2×2 stride-2 maximum takes its taps in MaxPool's order, for every width") {
  const std::vector<float> values = selection_values();
  for (VectorIsa isa : isas()) {
    for (int64_t cols = 0; cols <= 37; ++cols) {
      constexpr int64_t kRows = 3;
      const int64_t width = 2 * cols + 3, y_row = cols + 2; // room either side of what is written
      std::vector<float> x(static_cast<size_t>(2 * kRows * width));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = values[(i + static_cast<size_t>(cols)) % values.size()];
      std::vector<float> y(static_cast<size_t>(kRows * y_row), 7.0f);
      // Starting one column in, rows two input rows apart, as run_max_pool passes a padded plane.
      max_pool_2x2_cols_stride2({x.data() + 1, 2 * width, width, y.data(), y_row, cols, kRows}, isa);
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t j = 0; j < y_row; ++j) {
          const float got = y[static_cast<size_t>(r * y_row + j)];
          INFO("isa " << static_cast<int>(isa) << ", cols " << cols << ", row " << r << ", output " << j);
          if (j >= cols) {
            CHECK(got == 7.0f);
            continue;
          }
          const float* top = x.data() + 1 + r * 2 * width + 2 * j;
          float best = top[0];
          for (float t : {top[1], top[width], top[width + 1]})
            best = t > best ? t : best;
          CHECK(same_bits(got, best));
        }
      }
    }
  }
}

TEST_CASE("vector_math: channel blocks of 16 become planes and back, for every position count") {
  const std::vector<float> values = selection_values();
  for (VectorIsa isa : isas()) {
    for (int64_t positions = 0; positions <= 41; ++positions) {
      // Planes further apart than their positions, as a block of a convolution's output rows is:
      // the gaps, and whatever follows the last, must stay as they were.
      const int64_t plane = positions + 5;
      std::vector<float> blocked(static_cast<size_t>(16 * positions));
      for (size_t i = 0; i < blocked.size(); ++i)
        blocked[i] = values[(i * 7 + static_cast<size_t>(positions)) % values.size()];
      std::vector<float> planes(static_cast<size_t>(16 * plane), 7.0f), clamped = planes;
      unblock16(blocked.data(), positions, planes.data(), plane, false, isa);
      unblock16(blocked.data(), positions, clamped.data(), plane, true, isa);
      for (int64_t c = 0; c < 16; ++c) {
        for (int64_t p = 0; p < plane; ++p) {
          INFO("isa " << static_cast<int>(isa) << ", positions " << positions << ", channel " << c << ", at "
                      << p);
          const size_t at = static_cast<size_t>(c * plane + p);
          const float x = p < positions ? blocked[static_cast<size_t>(p * 16 + c)] : 7.0f;
          CHECK(same_bits(planes[at], x));
          CHECK(same_bits(clamped[at], x > 0.0f ? x : 0.0f)); // Relu's rule: 0 for -0 and NaN
        }
      }
      std::vector<float> back(static_cast<size_t>(16 * positions + 16), 7.0f);
      block16(planes.data(), plane, positions, back.data(), isa);
      for (size_t i = 0; i < back.size(); ++i) {
        INFO("isa " << static_cast<int>(isa) << ", positions " << positions << ", element " << i);
        CHECK(same_bits(back[i], i < blocked.size() ? blocked[i] : 7.0f));
      }
    }
  }
}
