// Opening NVRTC and the CUDA driver with dlopen (see CudaLibraries.h).
#include "CudaLibraries.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace unitile::cuda {

namespace {

// The first of `names` that dlopen accepts, or nullptr with every dlerror in `why`.
void* open_first(const std::vector<std::string>& names, std::string* why) {
  std::string errors;
  for (const std::string& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
    const char* e = dlerror();
    errors += (errors.empty() ? " " : "; ") + (e ? std::string(e) : n + ": cannot open");
  }
  *why = errors;
  return nullptr;
}

// Binds every `fn` to its symbol; false with the missing name in `why`.
struct Binder {
  void* lib;
  std::string* why;
  bool ok = true;
  template <typename F> void operator()(F*& fn, std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (void* sym = dlsym(lib, n)) {
        fn = reinterpret_cast<F*>(sym);
        return;
      }
    if (ok)
      *why = std::string("missing symbol ") + *names.begin();
    ok = false;
  }
};

// The directory with cuda_fp16.h that NVRTC's includes should search: $CUDA_HOME,
// $CUDA_PATH, next to the libnvrtc that was loaded, then the usual install places.
std::string find_include_dir(void* any_nvrtc_symbol) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v)
      candidates.push_back(fs::path(v) / "include");
  Dl_info info{};
  if (dladdr(any_nvrtc_symbol, &info) && info.dli_fname) {
    std::error_code ec;
    fs::path lib = fs::canonical(info.dli_fname, ec);
    if (!ec) {
      candidates.push_back(lib.parent_path().parent_path() / "include");
      // pip's nvidia-cuda-nvrtc wheel: site-packages/nvidia/cuda_nvrtc/lib; the half
      // headers live in the cuda_runtime wheel next to it.
      candidates.push_back(lib.parent_path().parent_path().parent_path() / "cuda_runtime" /
                           "include");
    }
  }
  candidates.push_back("/usr/local/cuda/include");
  candidates.push_back("/usr/include");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "cuda_fp16.h", ec))
      return dir.string();
  }
  return {};
}

} // namespace

const Nvrtc* nvrtc(std::string* why) {
  static std::once_flag once;
  static Nvrtc api{};
  static const Nvrtc* loaded = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::string errors;
    void* lib = open_first({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"},
                           &errors);
    if (!lib) {
      failure = "NVRTC (libnvrtc.so) is not installed or not on the library path:" + errors;
      return;
    }
    Binder bind{lib, &failure};
    bind(api.Version, {"nvrtcVersion"});
    bind(api.GetErrorString, {"nvrtcGetErrorString"});
    bind(api.CreateProgram, {"nvrtcCreateProgram"});
    bind(api.DestroyProgram, {"nvrtcDestroyProgram"});
    bind(api.CompileProgram, {"nvrtcCompileProgram"});
    bind(api.GetProgramLogSize, {"nvrtcGetProgramLogSize"});
    bind(api.GetProgramLog, {"nvrtcGetProgramLog"});
    bind(api.GetCUBINSize, {"nvrtcGetCUBINSize"});
    bind(api.GetCUBIN, {"nvrtcGetCUBIN"});
    bind(api.GetPTXSize, {"nvrtcGetPTXSize"});
    bind(api.GetPTX, {"nvrtcGetPTX"});
    if (!bind.ok) {
      failure = "NVRTC is too old for this plugin: " + failure;
      return;
    }
    int major = 0, minor = 0;
    api.Version(&major, &minor);
    api.version = "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
    api.include_dir = find_include_dir(reinterpret_cast<void*>(api.Version));
    loaded = &api;
  });
  if (!loaded && why)
    *why = failure;
  return loaded;
}

std::string driver_error(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  d.GetErrorName(r, &name);
  d.GetErrorString(r, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(r)) + ": " +
         (text ? text : "(no description)");
}

const DriverContext* driver(std::string* why) {
  static std::once_flag once;
  static Driver api{};
  static DriverContext ctx;
  static const DriverContext* ready = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::string errors;
    void* lib = open_first({"libcuda.so.1", "libcuda.so"}, &errors);
    if (!lib) {
      failure = "the NVIDIA driver (libcuda.so.1) is not installed:" + errors;
      return;
    }
    Binder bind{lib, &failure};
    bind(api.Init, {"cuInit"});
    bind(api.GetErrorName, {"cuGetErrorName"});
    bind(api.GetErrorString, {"cuGetErrorString"});
    bind(api.DeviceGetCount, {"cuDeviceGetCount"});
    bind(api.DeviceGet, {"cuDeviceGet"});
    bind(api.DeviceGetName, {"cuDeviceGetName"});
    bind(api.DeviceGetAttribute, {"cuDeviceGetAttribute"});
    bind(api.DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
    bind(api.CtxSetCurrent, {"cuCtxSetCurrent"});
    bind(api.CtxSynchronize, {"cuCtxSynchronize"});
    bind(api.MemAlloc, {"cuMemAlloc_v2"});
    bind(api.MemFree, {"cuMemFree_v2"});
    bind(api.MemcpyHtoD, {"cuMemcpyHtoD_v2"});
    bind(api.MemcpyDtoH, {"cuMemcpyDtoH_v2"});
    bind(api.MemcpyDtoD, {"cuMemcpyDtoD_v2"});
    bind(api.ModuleLoadData, {"cuModuleLoadData"});
    bind(api.ModuleUnload, {"cuModuleUnload"});
    bind(api.ModuleGetFunction, {"cuModuleGetFunction"});
    bind(api.FuncGetAttribute, {"cuFuncGetAttribute"});
    bind(api.LaunchKernel, {"cuLaunchKernel"});
    bind(api.EventCreate, {"cuEventCreate"});
    bind(api.EventRecord, {"cuEventRecord"});
    bind(api.EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
    bind(api.EventDestroy, {"cuEventDestroy_v2"});
    if (!bind.ok) {
      failure = "the NVIDIA driver is too old for this plugin: " + failure;
      return;
    }
    if (CUresult r = api.Init(0); r != CUDA_SUCCESS) {
      failure = r == CUDA_ERROR_NO_DEVICE
                    ? "no CUDA GPU on this machine (cuInit: " + driver_error(api, r) + ")"
                    : "cuInit failed: " + driver_error(api, r);
      return;
    }
    int count = 0;
    if (CUresult r = api.DeviceGetCount(&count); r != CUDA_SUCCESS || count < 1) {
      failure = "no CUDA GPU on this machine (cuDeviceGetCount found none)";
      return;
    }
    ctx.api = &api;
    CUresult r = api.DeviceGet(&ctx.device, 0);
    if (r == CUDA_SUCCESS)
      r = api.DevicePrimaryCtxRetain(&ctx.context, ctx.device);
    if (r != CUDA_SUCCESS) {
      failure = "cannot open GPU 0: " + driver_error(api, r);
      return;
    }
    char name[256] = {};
    api.DeviceGetName(name, sizeof name - 1, ctx.device);
    ctx.device_name = name;
    int major = 0, minor = 0;
    api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx.device);
    api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx.device);
    ctx.sm = major * 10 + minor;
    ready = &ctx;
  });
  if (!ready) {
    if (why)
      *why = failure;
    return nullptr;
  }
  ready->api->CtxSetCurrent(ready->context); // driver calls act on the calling thread's context
  return ready;
}

} // namespace unitile::cuda
