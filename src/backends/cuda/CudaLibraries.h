// NVRTC and the CUDA driver API, opened at run time with dlopen, so the cuda plugin
// builds and loads on machines without CUDA. Only the few types and entry points the
// plugin calls are declared here, with the C ABI of NVIDIA's nvrtc.h and cuda.h (stable
// across CUDA 11-13); no CUDA header is needed to build.
#pragma once

#include <cstddef>
#include <string>

namespace unitile::cuda {

// ----- NVRTC
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc {
  nvrtcResult (*Version)(int* major, int* minor);
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*CreateProgram)(nvrtcProgram* prog, const char* src, const char* name,
                               int num_headers, const char* const* headers,
                               const char* const* include_names);
  nvrtcResult (*DestroyProgram)(nvrtcProgram* prog);
  nvrtcResult (*CompileProgram)(nvrtcProgram prog, int num_options, const char* const* options);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram prog, size_t* size);
  nvrtcResult (*GetProgramLog)(nvrtcProgram prog, char* log);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram prog, size_t* size);
  nvrtcResult (*GetCUBIN)(nvrtcProgram prog, char* cubin);
  nvrtcResult (*GetPTXSize)(nvrtcProgram prog, size_t* size);
  nvrtcResult (*GetPTX)(nvrtcProgram prog, char* ptx);
  /// Directory holding cuda_fp16.h for the generated code's includes, or empty.
  std::string include_dir;
  /// "NVRTC 13.0" (part of the kernel cache key).
  std::string version;
};

/// NVRTC, loaded once; nullptr with `why` set when libnvrtc cannot be opened.
const Nvrtc* nvrtc(std::string* why);

// ----- driver API
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;

struct Driver {
  CUresult (*Init)(unsigned flags);
  CUresult (*GetErrorName)(CUresult, const char** name);
  CUresult (*GetErrorString)(CUresult, const char** text);
  CUresult (*DeviceGetCount)(int* count);
  CUresult (*DeviceGet)(CUdevice* dev, int ordinal);
  CUresult (*DeviceGetName)(char* name, int len, CUdevice dev);
  CUresult (*DeviceGetAttribute)(int* value, int attribute, CUdevice dev);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice dev);
  CUresult (*CtxSetCurrent)(CUcontext ctx);
  CUresult (*CtxSynchronize)();
  CUresult (*MemAlloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr ptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes);
  CUresult (*MemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  CUresult (*ModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*ModuleUnload)(CUmodule module);
  CUresult (*ModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name);
  CUresult (*FuncGetAttribute)(int* value, int attribute, CUfunction fn);
  CUresult (*LaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                           void** params, void** extra);
  CUresult (*EventCreate)(CUevent* event, unsigned flags);
  CUresult (*EventRecord)(CUevent event, CUstream stream);
  CUresult (*EventElapsedTime)(float* ms, CUevent start, CUevent end);
  CUresult (*EventDestroy)(CUevent event);
};

/// The driver with device 0's primary context, initialised once; nullptr with `why` set
/// when libcuda.so.1 is missing, cuInit fails or there is no GPU.
struct DriverContext {
  const Driver* api = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string device_name; // "NVIDIA H200"
  int sm = 0;              // compute capability, 90 for sm_90
};
const DriverContext* driver(std::string* why);

/// "CUDA_ERROR_X: text" for a driver status.
std::string driver_error(const Driver& d, CUresult r);

} // namespace unitile::cuda
