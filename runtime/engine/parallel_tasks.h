// The engine's one way to run tasks on oneTBB's workers: body(i) for every i in [0, count), in
// `arena`, returning once every task has run.
//
// Under ThreadSanitizer it also tells TSan what oneTBB guarantees but TSan cannot see: Debian's
// libtbb is not instrumented, and cmake/tsan_ignorelist.txt leaves oneTBB's header code
// uninstrumented too, so the hand-over of a task to a worker is invisible. The edges: everything
// before the call happens before every task, and every task before the return. Without them
// every task would look racy against the thread that spawned it; with them TSan reports the
// races between tasks, which are the ones the engine could have.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IPU_ENGINE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) // GCC's spelling
#define IPU_ENGINE_TSAN 1
#endif
#ifdef IPU_ENGINE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ipu::engine {

template <typename Body> void run_parallel(tbb::task_arena& arena, size_t count, const Body& body) {
#ifdef IPU_ENGINE_TSAN
  char before = 0, after = 0; // addresses TSan keys the two edges on
  __tsan_release(&before);
#endif
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, count), [&](const tbb::blocked_range<size_t>& range) {
#ifdef IPU_ENGINE_TSAN
      __tsan_acquire(&before);
#endif
      for (size_t i = range.begin(); i != range.end(); ++i)
        body(i);
#ifdef IPU_ENGINE_TSAN
      __tsan_release(&after);
#endif
    });
  });
#ifdef IPU_ENGINE_TSAN
  __tsan_acquire(&after);
#endif
}

} // namespace ipu::engine
