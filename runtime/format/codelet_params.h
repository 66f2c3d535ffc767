// Each codelet's params by name, made from runtime/format/codelet_params.def: for every codelet a
// struct in format::params whose enumerators are the indices of its params (MatMul::kRowBegin),
// and in format::fparams one for its float params. The compiler writes params with make_params,
// which places each value at its name's index; the kernels read v.params[P::kRowBegin]. Indices
// are compile-time constants, so a kernel reads a param exactly as it would at a literal index.
//
// A layout with a tail (Binary, Where, StridedCopy, Reduce, BatchMatMul) names its fixed head;
// the enumerator after the head (e.g. Binary::kDims) is where the tail begins, and
// count(p) gives the whole length from the head's values.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "runtime/format/codelet.h"

namespace ipu::format {

namespace params {

// The names as written, after the shared groups are expanded: "kM, kN, ...".
#define IPU_PARAM_NAMES(...) IPU_PARAM_NAMES_INNER(__VA_ARGS__)
#define IPU_PARAM_NAMES_INNER(...) #__VA_ARGS__

#define PARAMS(codelet, ...)                                                                                 \
  struct codelet {                                                                                           \
    static constexpr Codelet kCodelet = Codelet::k##codelet;                                                 \
    enum Index { __VA_ARGS__, kCount };                                                                      \
    static constexpr int kFixed = kCount;                                                                    \
    static constexpr bool kHasTail = false;                                                                  \
    static constexpr std::string_view kNames = IPU_PARAM_NAMES(__VA_ARGS__);                                 \
  };
#define PARAMS_TAIL(codelet, tail, length, ...)                                                              \
  struct codelet {                                                                                           \
    static constexpr Codelet kCodelet = Codelet::k##codelet;                                                 \
    enum Index { __VA_ARGS__, tail };                                                                        \
    static constexpr int kFixed = tail;                                                                      \
    static constexpr bool kHasTail = true;                                                                   \
    static constexpr std::string_view kNames = IPU_PARAM_NAMES(__VA_ARGS__);                                 \
    static constexpr std::string_view kTailName = #tail;                                                     \
    static constexpr int64_t count(const int64_t* p) { return tail + (length); }                             \
  };
#define FPARAMS(codelet, ...)
#include "runtime/format/codelet_params.def"
#undef PARAMS
#undef PARAMS_TAIL
#undef FPARAMS

// The shared groups that lead other layouts (codelet_params.def): their indices are the same in
// every layout that starts with them.
struct Window {
  enum Index { IPU_WINDOW_PARAMS, kCount };
  static constexpr int kFixed = kCount;
  static constexpr bool kHasTail = false;
  static constexpr std::string_view kNames = IPU_PARAM_NAMES(IPU_WINDOW_PARAMS);
};
struct Loss {
  enum Index { IPU_LOSS_PARAMS, kCount };
  static constexpr int kFixed = kCount;
  static constexpr bool kHasTail = false;
  static constexpr std::string_view kNames = IPU_PARAM_NAMES(IPU_LOSS_PARAMS);
};

} // namespace params

namespace fparams {

#define PARAMS(codelet, ...)
#define PARAMS_TAIL(codelet, tail, length, ...)
#define FPARAMS(codelet, ...)                                                                                \
  struct codelet {                                                                                           \
    enum Index { __VA_ARGS__, kCount };                                                                      \
    static constexpr std::string_view kNames = #__VA_ARGS__;                                                 \
  };
#include "runtime/format/codelet_params.def"
#undef PARAMS
#undef PARAMS_TAIL
#undef FPARAMS

} // namespace fparams

// codelet_params.def gives every codelet of codelets.def a layout (a misspelt name fails to
// compile at its kCodelet, one named twice at its second struct).
inline constexpr int kCodeletsWithParams = 0
#define PARAMS(codelet, ...) +1
#define PARAMS_TAIL(codelet, tail, length, ...) +1
#define FPARAMS(codelet, ...)
#include "runtime/format/codelet_params.def"
#undef PARAMS
#undef PARAMS_TAIL
#undef FPARAMS
    ;
static_assert(kCodeletsWithParams == 0
#define CODELET(name, id, text) +1
#include "runtime/format/codelets.def"
#undef CODELET
              ,
              "runtime/format/codelet_params.def must give every codelet of codelets.def its params");

// Whether two codelets lay out their params alike (a lowering that writes either one, such as
// Activation and ActivationGrad, asserts it).
template <typename A, typename B>
inline constexpr bool same_layout = A::kNames == B::kNames&& A::kHasTail == B::kHasTail;

// A param given by name, for make_params.
struct NamedParam {
  int index;
  int64_t value;
};
struct NamedFParam {
  int index;
  float value;
};

namespace detail {
// Places `named` after `group`: together they must name every index below `fixed` exactly once.
// A lowering that misses or repeats a param is a compiler bug, so it aborts.
inline std::vector<int64_t> place_params(int fixed, const std::vector<int64_t>& group,
                                         std::initializer_list<NamedParam> named) {
  std::vector<int64_t> p(static_cast<size_t>(fixed));
  std::vector<bool> given(static_cast<size_t>(fixed), false);
  for (size_t i = 0; i < group.size() && i < p.size(); ++i)
    p[i] = group[i], given[i] = true;
  if (group.size() + named.size() != p.size()) std::abort();
  for (const NamedParam& n : named) {
    if (n.index < 0 || n.index >= fixed || given[static_cast<size_t>(n.index)]) std::abort();
    p[static_cast<size_t>(n.index)] = n.value;
    given[static_cast<size_t>(n.index)] = true;
  }
  return p;
}
} // namespace detail

// The params of a fixed layout, every one given by name (in any order).
template <typename Layout>
requires(!Layout::kHasTail) std::vector<int64_t> make_params(std::initializer_list<NamedParam> named) {
  return detail::place_params(Layout::kFixed, {}, named);
}

// The params of a fixed layout that starts with a shared group (params::Window, params::Loss):
// `group` holds the group's values, `named` the rest.
template <typename Layout>
requires(!Layout::kHasTail) std::vector<int64_t> make_params(const std::vector<int64_t>& group,
                                                             std::initializer_list<NamedParam> named) {
  return detail::place_params(Layout::kFixed, group, named);
}

// The params of a layout with a tail: the head by name, then `tail`, whose length must be the
// layout's rule over the head.
template <typename Layout>
requires(Layout::kHasTail) std::vector<int64_t> make_params(std::initializer_list<NamedParam> named,
                                                            const std::vector<int64_t>& tail) {
  std::vector<int64_t> p = detail::place_params(Layout::kFixed, {}, named);
  p.insert(p.end(), tail.begin(), tail.end());
  if (static_cast<int64_t>(p.size()) != Layout::count(p.data())) std::abort();
  return p;
}

// The float params of a codelet, every one given by name.
template <typename Layout> std::vector<float> make_fparams(std::initializer_list<NamedFParam> named) {
  std::vector<float> f(Layout::kCount);
  std::vector<bool> given(Layout::kCount, false);
  if (named.size() != f.size()) std::abort();
  for (const NamedFParam& n : named) {
    if (n.index < 0 || n.index >= Layout::kCount || given[static_cast<size_t>(n.index)]) std::abort();
    f[static_cast<size_t>(n.index)] = n.value;
    given[static_cast<size_t>(n.index)] = true;
  }
  return f;
}

} // namespace ipu::format
