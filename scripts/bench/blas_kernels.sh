# Sourced by the benchmarks whose peer runs on OpenBLAS (numpy, torch), after the build: the peer
# loads the kernels ipurun runs. Where OpenBLAS's own choice is narrower than the CPU's vectors,
# ipurun sets OPENBLAS_CORETYPE itself (runtime/kernels/blas_core.h) and a peer would keep the
# narrow choice: the ratio would measure OpenBLAS's table of CPU models, not the simulator.
blas_kernels=$("$root/build/cli/ipurun" --version | sed -n 's/^OpenBLAS kernels: //p')
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$blas_kernels}
