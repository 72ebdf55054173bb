// The kernels `unitile bench` measures: bench/kernels/*.ut, compiled into the command as
// text so the benchmark needs no source tree at run time.
#pragma once

#include "ir/Kernel.h"

#include <span>
#include <string>

namespace unitile::bench {

struct BenchKernelFile {
  const char* name; // "gemm.ut"
  const char* text;
};

std::span<const BenchKernelFile> bench_kernel_files();

/// Kernel `kernel` of embedded file `file`, parsed and verified once per process.
const Kernel& bench_kernel(const std::string& file, const std::string& kernel);

} // namespace unitile::bench
