// Parsing the embedded bench kernels on first use.
#include "harness/BenchKernels.h"

#include "ir/Diagnostic.h"
#include "ir/Parser.h"

#include <fmt/core.h>

#include <map>
#include <mutex>

namespace unitile::bench {

const Kernel& bench_kernel(const std::string& file, const std::string& kernel) {
  static std::mutex mu;
  static std::map<std::string, Module> modules;
  std::lock_guard lock(mu);
  auto it = modules.find(file);
  if (it == modules.end()) {
    for (const BenchKernelFile& f : bench_kernel_files())
      if (file == f.name)
        it = modules.emplace(file, parse_module(SourceFile{"bench/kernels/" + file, f.text})).first;
    UT_INTERNAL_ASSERT(it != modules.end(), "no embedded bench kernel file " + file);
  }
  const Kernel* k = it->second.find(kernel);
  UT_INTERNAL_ASSERT(k != nullptr, "bench/kernels/" + file + " has no kernel " + kernel);
  return *k;
}

} // namespace unitile::bench
