// Loops over float arrays at the widest instruction set the CPU has, chosen at run time so the
// program itself runs on any x86-64 CPU: exp and erf through SLEEF's vector functions of at most
// 1 ULP error (the u10 family), sixteen elements at a time with AVX-512, eight with AVX2 and FMA,
// else four through SLEEF's dispatcher (its SSE2, SSE4.1 or AVX2 build); and a few kernels whose
// baseline (SSE2) loops spend their time on loop overhead rather than work.
#pragma once

#include <cstdint>

namespace ipu::kernels {

// kAvx512: AVX-512F besides AVX2 and FMA. Its exp and erf give AVX2's bits for every float
// (Debian 12's SLEEF 3.5.1, proved by the skipped test "AVX-512 gives AVX2's bits for every
// float" in tests/unit/runtime/kernels/test_vector_math.cpp): a model's numbers do not depend on
// which of the two its machine has. The functions below without an AVX-512 path take AVX2's.
enum class VectorIsa { kSse2, kAvx2Fma, kAvx512 };

// The widest instruction set this CPU runs, found once.
VectorIsa best_vector_isa();

// y[i] = f(x[i]) for i in [0, n); y may be x. An element's result depends on its value and the
// instruction set only, never on its position or on n, so however vertices split a range the
// results are the same. `isa` must be one this CPU runs (tests pass kSse2 to cover it).
void vector_exp(const float* x, float* y, int64_t n, VectorIsa isa = best_vector_isa());
void vector_erf(const float* x, float* y, int64_t n, VectorIsa isa = best_vector_isa());

// y[i] = std::exp(x[i]) and 1 / (1 + std::exp(-x[i])) in float, bit for bit what the C library's
// expf gives (kernels that always used it keep their results), eight at a time with AVX2 and
// sixteen with AVX-512 (the same double operations per lane): e^x in double, rounded to float
// where that provably gives expf's float, expf itself for the few lanes near a rounding boundary
// or outside [-87, 88]. Proved against expf for every float by the
// skipped test "libm_exp equals expf for every float" (tests/unit/runtime/kernels/test_vector_math.cpp).
// y may be x.
void libm_exp(const float* x, float* y, int64_t n, VectorIsa isa = best_vector_isa());
void libm_sigmoid(const float* x, float* y, int64_t n, VectorIsa isa = best_vector_isa());

// sums[c] = Σ_j x[j·stride + c] in double for c in [0, n), j in [0, count), adding the rows in
// order from 0.0: the sum a split reduction gives its shares. Double addition rounds the same in
// any lane, so both instruction sets give the same bits as a scalar loop.
void sum_rows_in_double(const float* x, int64_t stride, int64_t count, int64_t n, double* sums,
                        VectorIsa isa = best_vector_isa());

// Relu, written once for every codelet that applies it (Activation, Unary, and the fused epilogues
// of MatMul and Conv, so a fused model computes bitwise what the unfused one did):
// y[i] = x[i] > 0 ? x[i] : 0 for i in [0, n), 0 for a NaN as for -0 and every negative; y may be
// x. maxps(x, 0) is that comparison exactly, so every instruction set gives the same bits.
void vector_relu(const float* x, float* y, int64_t n, VectorIsa isa = best_vector_isa());

// Relu's gradient through its output (ActivationGrad): dx[i] = y[i] > 0 ? dy[i] : 0 for i in
// [0, n), 0 where y is a NaN; dx may be y or dy. A vector comparison selects as the
// scalar one does, so every instruction set gives the same bits.
void vector_relu_grad(const float* y, const float* dy, float* dx, int64_t n,
                      VectorIsa isa = best_vector_isa());

// A 2×2 maximum pool with a column stride of 2 over `rows` output rows of `cols` each: output
// (r, j) at y[r·y_row + j] is the maximum of the taps t0..t3 = top[2j], top[2j + 1],
// bottom[2j], bottom[2j + 1] for top = x + r·x_row and bottom = top + below, taken as MaxPool's
// scalar loop does (best = t0, then best = t > best ? t : best for t1..t3), so NaNs and signed
// zeros land where they do there. maxps(t, best) is that comparison exactly.
struct PoolRows {
  const float* x;
  int64_t x_row; // from one output row's top input row to the next's
  int64_t below; // from a top input row to its bottom one
  float* y;
  int64_t y_row;
  int64_t cols, rows;
};
void max_pool_2x2_cols_stride2(const PoolRows& pool, VectorIsa isa = best_vector_isa());

// oneDNN's channel blocks (its aBcd16b layout: sixteen channels side by side at each position)
// to planes and back, for a convolution's operands: planes[c·plane + p] = blocked[p·16 + c] for
// c in [0, 16), p in [0, positions), or with `relu` what vector_relu makes of it (a convolution's
// fused Relu, in the same pass). The same bits on every instruction set; AVX-512
// moves sixteen positions at a time through a 16×16 transpose in registers, where oneDNN's own
// reorder, element by element, took about a fifth of ResNet-18's convolution time (ARCHITECTURE.md).
void unblock16(const float* blocked, int64_t positions, float* planes, int64_t plane, bool relu,
               VectorIsa isa = best_vector_isa());
void block16(const float* planes, int64_t plane, int64_t positions, float* blocked,
             VectorIsa isa = best_vector_isa());

} // namespace ipu::kernels
