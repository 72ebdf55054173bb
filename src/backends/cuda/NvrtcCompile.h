// CUDA C++ source to a cubin (or PTX) with NVRTC; the cuda plugin's compile call.
#pragma once

#include <string>
#include <vector>

namespace unitile::cuda {

struct CompileResult {
  bool ok = false;
  bool unavailable = false; // NVRTC is not installed (message says why)
  std::string message;      // on failure: what went wrong, with NVRTC's log
  std::vector<char> binary; // a cubin (ELF) or, for a virtual architecture, PTX text
};

/// Compile `source` with `options`: the HCD's compiler name ("nvrtc") followed by NVRTC
/// options. A later --gpu-architecture replaces an earlier one, so appending
/// `--gpu-architecture=compute_90` turns a cubin compile into a PTX one. Without any,
/// the architecture is sm_90 (the built-in H100/H200 HCDs').
CompileResult compile_with_nvrtc(const std::string& source, const std::string& options);

} // namespace unitile::cuda
