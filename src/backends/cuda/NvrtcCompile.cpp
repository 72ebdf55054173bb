// Compiling with NVRTC (see NvrtcCompile.h).
#include "NvrtcCompile.h"

#include "CudaLibraries.h"

#include <sstream>

namespace unitile::cuda {

namespace {

bool is_arch_option(const std::string& o) {
  return o.rfind("--gpu-architecture", 0) == 0 || o.rfind("-arch", 0) == 0;
}

// NVRTC options from the HCD's toolchain text; an error message instead when the HCD
// names another compiler.
std::vector<std::string> nvrtc_options(const std::string& options, std::string* error) {
  std::istringstream in(options);
  std::vector<std::string> words, out;
  for (std::string w; in >> w;)
    words.push_back(w);
  size_t first = 0;
  if (!words.empty() && words[0].rfind('-', 0) != 0) {
    if (words[0] != "nvrtc") {
      *error = "cuda: the HCD's toolchain compiler is '" + words[0] +
               "'; this plugin compiles with nvrtc (set [toolchain] compiler = \"nvrtc\")";
      return {};
    }
    first = 1;
  }
  std::string arch = "--gpu-architecture=sm_90";
  for (size_t k = first; k < words.size(); ++k) {
    if (is_arch_option(words[k]))
      arch = words[k]; // the last one wins
    else
      out.push_back(words[k]);
  }
  out.push_back(arch);
  return out;
}

} // namespace

CompileResult compile_with_nvrtc(const std::string& source, const std::string& options) {
  CompileResult r;
  const Nvrtc* nv = nvrtc(&r.message);
  if (!nv) {
    r.unavailable = true;
    r.message = "cuda: cannot compile: " + r.message;
    return r;
  }
  std::string bad_option;
  std::vector<std::string> opts = nvrtc_options(options, &bad_option);
  if (!bad_option.empty()) {
    r.message = bad_option;
    return r;
  }
  if (!nv->include_dir.empty())
    opts.push_back("--include-path=" + nv->include_dir);
  std::vector<const char*> argv;
  for (const std::string& o : opts)
    argv.push_back(o.c_str());

  nvrtcProgram prog = nullptr;
  if (nvrtcResult e =
          nv->CreateProgram(&prog, source.c_str(), "unitile_kernel.cu", 0, nullptr, nullptr);
      e != 0) {
    r.message = std::string("cuda: nvrtcCreateProgram failed: ") + nv->GetErrorString(e);
    return r;
  }
  nvrtcResult status = nv->CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  std::string log;
  if (nv->GetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    nv->GetProgramLog(prog, log.data());
    log.resize(log_size - 1);
  }
  if (status != 0) {
    std::string flags;
    for (const std::string& o : opts)
      flags += " " + o;
    r.message =
        std::string(nv->GetErrorString(status)) + " (" + nv->version + "," + flags + ")\n" + log;
    if (nv->include_dir.empty() && log.find("cuda_fp16.h") != std::string::npos)
      r.message += "\nhint: set CUDA_HOME to the CUDA toolkit that holds include/cuda_fp16.h";
    nv->DestroyProgram(&prog);
    return r;
  }
  size_t size = 0;
  nv->GetCUBINSize(prog, &size);
  if (size > 0) {
    r.binary.resize(size);
    nv->GetCUBIN(prog, r.binary.data());
  } else { // a virtual architecture: PTX only, loaded by the driver's JIT
    nv->GetPTXSize(prog, &size);
    r.binary.resize(size);
    nv->GetPTX(prog, r.binary.data());
    while (!r.binary.empty() && r.binary.back() == '\0')
      r.binary.pop_back();
  }
  nv->DestroyProgram(&prog);
  r.ok = true;
  return r;
}

} // namespace unitile::cuda
