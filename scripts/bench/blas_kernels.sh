# Sourced by the benchmarks after the build: ipurun, and any peer that runs on OpenBLAS (numpy,
# torch's matrix products), load the OpenBLAS kernels that fit this CPU, and $blas_kernels names
# them. Where OpenBLAS's own choice is narrower than the CPU's vectors, ipurun sets
# OPENBLAS_CORETYPE itself (runtime/kernels/blas_core.h); a peer would keep the narrow choice, and
# the ratio would measure OpenBLAS's table of CPU models, not the simulator. A machine's
# environment may set OPENBLAS_CORETYPE for every process, narrower than the CPU (seen: Haswell's
# AVX2 kernels on an AVX-512 EPYC): it would narrow ipurun's products and numpy's, not ORT's
# kernels or torch's convolutions, which pick theirs from the CPU. So the benchmarks replace it
# with the kernels ipurun picks when it is unset.
blas_kernels=$(env -u OPENBLAS_CORETYPE "$root/build/cli/ipurun" --version | sed -n 's/^OpenBLAS kernels: //p')
export OPENBLAS_CORETYPE=$blas_kernels
