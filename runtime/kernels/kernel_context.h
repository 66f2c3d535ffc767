// What a kernel may use beyond its vertex, passed in by the engine (as ONNX Runtime passes an
// OpKernelContext): the worker thread's scratch, which compute set is running, and a slot for a
// fault. Kernels hold no state of their own, so two engines in one process share nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kernels/kernel_fault.h"

namespace ipu::kernels {

// The forward convolution's per-thread oneDNN state (conv_forward.cpp).
class ConvWorkspace;
struct ConvWorkspaceDeleter {
  void operator()(ConvWorkspace* workspace) const;
};

// Buffers one worker thread reuses across the vertices it runs. The engine keeps one per thread
// that runs its compute sets and drops them with itself.
class WorkerScratch {
public:
  // At least `elements` floats, whose contents are unspecified: one buffer, so a kernel asks
  // for it once per vertex.
  float* floats(size_t elements) {
    if (m_floats.size() < elements) m_floats.resize(elements);
    return m_floats.data();
  }

  // Made on first use, on the thread that uses it (oneDNN's team size is a per-thread setting).
  ConvWorkspace& conv();

private:
  std::vector<float> m_floats;
  std::unique_ptr<ConvWorkspace, ConvWorkspaceDeleter> m_conv;
};

struct KernelContext {
  WorkerScratch& scratch;
  // Counts the compute sets the engine has run, this one included. Inputs of a compute set do not
  // change while it runs (its vertices write disjoint outputs, never what another reads), so
  // scratch derived from inputs, such as the convolution's converted weights, stays valid while
  // this number does.
  uint64_t compute_set;
  // A kernel whose data leaves the op's domain fills this and returns at the first such element
  // (what it wrote until then is unspecified), and leaves it alone otherwise.
  KernelFault& fault;
};

} // namespace ipu::kernels
