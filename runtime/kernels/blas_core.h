// Which SGEMM kernels OpenBLAS runs, and which it should. OpenBLAS picks its kernels once, when
// it loads, from the CPU's family and model, and a model newer than the library gets a generic
// kernel: Debian 12's OpenBLAS 0.3.21 takes an Emerald Rapids Xeon (family 6, model 0xCF) for a
// Prescott and runs SSE3 code, 14-19 GFLOP/s on one core where its AVX-512 kernel (SKYLAKEX)
// gives 96-125 (measured with numpy on this project's CI machines, 2026-12-01). The library reads
// OPENBLAS_CORETYPE when it loads, so the tools (and the unit tests, which compare bits with what
// the tools computed) set it and run themselves again; a user who sets it keeps their choice.
#pragma once

#include <string>
#include <string_view>

namespace ipu::kernels {

// The widest vector code a CPU (or an OpenBLAS kernel set) runs.
enum class VectorLevel { kSse, kAvx, kAvx2, kAvx512 };

// The level of OpenBLAS's kernel set for x86-64 named `core` (as openblas_get_corename() names
// it, any case); kSse for a name it does not know.
VectorLevel blas_core_level(std::string_view core);

// The OPENBLAS_CORETYPE that runs `cpu`'s vectors when OpenBLAS loaded `core`, a set for
// narrower ones; empty when `core` already runs them.
std::string better_blas_coretype(std::string_view core, VectorLevel cpu);

// The level of the CPU this runs on (the OS must save its registers, as libgcc checks).
VectorLevel cpu_vector_level();

// openblas_get_corename(): the kernels OpenBLAS loaded in this process.
std::string loaded_blas_core();

// When OPENBLAS_CORETYPE is unset and OpenBLAS loaded a kernel set narrower than the CPU runs,
// sets it to the set that fits and executes this program again with the same arguments (about
// 17 ms). Call first in main, before any thread or output. Returns when nothing is to change, or
// when the program cannot execute itself (it then runs on as it is: slower, and with the results
// of the narrower kernels, which may differ from the wider ones' in the last bits).
void rerun_with_best_blas_kernels(char** argv);

} // namespace ipu::kernels
