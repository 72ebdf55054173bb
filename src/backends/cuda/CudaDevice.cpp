// The cuda device plugin: CUDA C++ from codegen compiled by NVRTC, loaded and launched
// through the driver API, behind the 12-call ABI. Both libraries are opened with dlopen
// (CudaLibraries.h), so the plugin builds and loads anywhere: without NVRTC, compile
// reports UT_ERROR_UNAVAILABLE; without the driver or a GPU, so do alloc, load, launch
// and the timer, each with the reason.
//
// Everything runs on GPU 0's primary context and the legacy default stream, so the
// copies and launches are ordered as the ABI requires, and copy_out (a synchronous
// cuMemcpyDtoH) is complete when it returns.
#include "CudaLibraries.h"
#include "NvrtcCompile.h"

#include "unitile/device.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct ut_buffer {
  unitile::cuda::CUdeviceptr ptr = 0;
  size_t bytes = 0;
};
struct ut_binary {
  std::vector<char> bytes;
};
struct ut_kernel {
  unitile::cuda::CUmodule module = nullptr;
  unitile::cuda::CUfunction function = nullptr;
  std::string entry;
};
struct ut_event {
  unitile::cuda::CUevent event = nullptr;
};

namespace unitile::cuda {

namespace {

ut_status fail(ut_error* err, ut_status status, const std::string& message) {
  if (err)
    std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
  return status;
}

// Runs `body`, turning any exception into a status: nothing may cross the C ABI.
template <typename F> ut_status guarded(ut_error* err, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(err, UT_ERROR_MEMORY, "cuda: out of host memory");
  } catch (const std::exception& e) {
    return fail(err, UT_ERROR_INTERNAL, std::string("cuda: ") + e.what());
  } catch (...) {
    return fail(err, UT_ERROR_INTERNAL, "cuda: unknown internal error");
  }
}

// The driver ready on this thread, or nullptr with UT_ERROR_UNAVAILABLE written to `err`.
const DriverContext* gpu(ut_error* err, const char* what) {
  std::string why;
  const DriverContext* d = driver(&why);
  if (!d)
    fail(err, UT_ERROR_UNAVAILABLE, std::string("cuda: cannot ") + what + ": " + why);
  return d;
}

// UT_OK, or `status` with the driver's description of `r`.
ut_status check(ut_error* err, const DriverContext& d, CUresult r, ut_status status,
                const std::string& what) {
  if (r == CUDA_SUCCESS)
    return UT_OK;
  return fail(err, r == CUDA_ERROR_OUT_OF_MEMORY ? UT_ERROR_MEMORY : status,
              "cuda: " + what + ": " + driver_error(*d.api, r));
}

ut_status describe(ut_device_info* info, ut_error*) {
  static std::string version;
  std::string why;
  const Nvrtc* nv = nvrtc(&why);
  version = nv ? nv->version : "nvrtc unavailable";
  // The HCD of the GPU present; where none is (or it is not an H200), the H100 file,
  // whose limits and sm_90 target the H200 shares.
  const DriverContext* d = driver(nullptr);
  bool h200 = d && d->device_name.find("H200") != std::string::npos;
  info->name = "cuda";
  info->hcd_toml = nullptr;
  info->hcd_builtin = h200 ? "nvidia-h200" : "nvidia-h100";
  info->toolchain_version = version.c_str();
  return UT_OK;
}

ut_status alloc(size_t bytes, ut_buffer** out, ut_error* err) {
  return guarded(err, [&] {
    const DriverContext* d = gpu(err, "allocate device memory");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    auto b = std::make_unique<ut_buffer>();
    b->bytes = bytes;
    if (ut_status s = check(err, *d, d->api->MemAlloc(&b->ptr, bytes), UT_ERROR_MEMORY,
                            "cuMemAlloc of " + std::to_string(bytes) + " bytes");
        s != UT_OK)
      return s;
    *out = b.release();
    return UT_OK;
  });
}

void free_buffer(ut_buffer* b) {
  if (!b)
    return;
  if (const DriverContext* d = driver(nullptr))
    d->api->MemFree(b->ptr);
  delete b;
}

bool in_range(size_t offset, size_t bytes, size_t size) {
  return offset <= size && bytes <= size - offset;
}

ut_status copy_in(ut_buffer* dst, size_t offset, const void* src, size_t bytes, ut_error* err) {
  return guarded(err, [&] {
    if (!dst || !in_range(offset, bytes, dst->bytes))
      return fail(err, UT_ERROR_INVALID, "cuda: copy_in outside the buffer");
    const DriverContext* d = gpu(err, "copy to the GPU");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    return check(err, *d, d->api->MemcpyHtoD(dst->ptr + offset, src, bytes), UT_ERROR_LAUNCH,
                 "cuMemcpyHtoD");
  });
}

ut_status copy_out(void* dst, const ut_buffer* src, size_t offset, size_t bytes, ut_error* err) {
  return guarded(err, [&] {
    if (!src || !in_range(offset, bytes, src->bytes))
      return fail(err, UT_ERROR_INVALID, "cuda: copy_out outside the buffer");
    const DriverContext* d = gpu(err, "copy from the GPU");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    // A synchronous copy on the legacy stream: it waits for queued kernels, and kernel
    // faults surface here as launch errors.
    return check(err, *d, d->api->MemcpyDtoH(dst, src->ptr + offset, bytes), UT_ERROR_LAUNCH,
                 "cuMemcpyDtoH");
  });
}

ut_status copy(ut_buffer* dst, size_t dst_offset, const ut_buffer* src, size_t src_offset,
               size_t bytes, ut_error* err) {
  return guarded(err, [&] {
    if (!dst || !src || !in_range(dst_offset, bytes, dst->bytes) ||
        !in_range(src_offset, bytes, src->bytes))
      return fail(err, UT_ERROR_INVALID, "cuda: copy outside a buffer");
    const DriverContext* d = gpu(err, "copy on the GPU");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    return check(err, *d, d->api->MemcpyDtoD(dst->ptr + dst_offset, src->ptr + src_offset, bytes),
                 UT_ERROR_LAUNCH, "cuMemcpyDtoD");
  });
}

ut_status compile(const char* source, const char* options, ut_binary** out, const void** data,
                  size_t* size, ut_error* err) {
  return guarded(err, [&] {
    CompileResult r = compile_with_nvrtc(source ? source : "", options ? options : "");
    if (!r.ok)
      return fail(err, r.unavailable ? UT_ERROR_UNAVAILABLE : UT_ERROR_COMPILE, r.message);
    auto b = std::make_unique<ut_binary>();
    b->bytes = std::move(r.binary);
    *data = b->bytes.data();
    *size = b->bytes.size();
    *out = b.release();
    return UT_OK;
  });
}

ut_status load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err) {
  return guarded(err, [&] {
    if (!data || size == 0 || !entry)
      return fail(err, UT_ERROR_INVALID, "cuda: load needs a binary and an entry name");
    const DriverContext* d = gpu(err, "load a kernel");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    // A cubin is an ELF image; anything else is PTX, which the driver wants NUL-ended.
    std::vector<char> image(static_cast<const char*>(data), static_cast<const char*>(data) + size);
    if (!(size >= 4 && std::memcmp(image.data(),
                                   "\x7f"
                                   "ELF",
                                   4) == 0))
      image.push_back('\0');
    auto k = std::make_unique<ut_kernel>();
    k->entry = entry;
    CUresult r = d->api->ModuleLoadData(&k->module, image.data());
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU)
      return fail(err, UT_ERROR_UNAVAILABLE,
                  "cuda: the binary was not built for this GPU (" + d->device_name + ", sm_" +
                      std::to_string(d->sm) +
                      "); run with --hcd naming an HCD whose flags target this architecture");
    if (ut_status s = check(err, *d, r, UT_ERROR_LAUNCH, "cuModuleLoadData"); s != UT_OK)
      return s;
    r = d->api->ModuleGetFunction(&k->function, k->module, entry);
    if (r != CUDA_SUCCESS) {
      d->api->ModuleUnload(k->module);
      return check(err, *d, r, UT_ERROR_INVALID,
                   std::string("cuModuleGetFunction('") + entry + "')");
    }
    *out = k.release();
    return UT_OK;
  });
}

ut_status launch(ut_kernel* k, const uint32_t grid[3], const uint32_t block[3], const ut_arg* args,
                 uint32_t nargs, ut_error* err) {
  return guarded(err, [&] {
    if (!k)
      return fail(err, UT_ERROR_INVALID, "cuda: launch of a null kernel");
    const DriverContext* d = gpu(err, "launch a kernel");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    int max_threads = 0;
    d->api->FuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->function);
    uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    if (max_threads > 0 && threads > static_cast<uint64_t>(max_threads))
      return fail(err, UT_ERROR_LAUNCH,
                  "cuda: " + k->entry + " needs " + std::to_string(threads) +
                      " threads per block; compiled, it allows at most " +
                      std::to_string(max_threads));
    // The entry takes one by-value ut_args<N>: N 8-byte slots (CudaDialect.cpp).
    std::vector<uint64_t> slots(nargs > 0 ? nargs : 1, 0);
    for (uint32_t i = 0; i < nargs; ++i) {
      switch (args[i].kind) {
      case UT_ARG_BUFFER:
        if (!args[i].value.buffer)
          return fail(err, UT_ERROR_INVALID, "cuda: null buffer argument");
        slots[i] = args[i].value.buffer->ptr;
        break;
      case UT_ARG_I64:
        std::memcpy(&slots[i], &args[i].value.i64, 8);
        break;
      case UT_ARG_F64:
        std::memcpy(&slots[i], &args[i].value.f64, 8);
        break;
      default:
        return fail(err, UT_ERROR_INVALID, "cuda: unknown argument kind");
      }
    }
    void* params[] = {slots.data()};
    return check(err, *d,
                 d->api->LaunchKernel(k->function, grid[0], grid[1], grid[2], block[0], block[1],
                                      block[2], 0, nullptr, params, nullptr),
                 UT_ERROR_LAUNCH, "cuLaunchKernel(" + k->entry + ")");
  });
}

ut_status synchronize(ut_error* err) {
  return guarded(err, [&] {
    const DriverContext* d = gpu(err, "synchronize");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    return check(err, *d, d->api->CtxSynchronize(), UT_ERROR_LAUNCH,
                 "a kernel failed (cuCtxSynchronize)");
  });
}

ut_status timer(ut_timer_op op, ut_event** event, const ut_event* start, double* elapsed_ms,
                ut_error* err) {
  return guarded(err, [&] {
    const DriverContext* d = gpu(err, "time on the GPU");
    if (!d)
      return UT_ERROR_UNAVAILABLE;
    if (op == UT_TIMER_RECORD) {
      auto e = std::make_unique<ut_event>();
      if (ut_status s =
              check(err, *d, d->api->EventCreate(&e->event, 0), UT_ERROR_INTERNAL, "cuEventCreate");
          s != UT_OK)
        return s;
      if (ut_status s = check(err, *d, d->api->EventRecord(e->event, nullptr), UT_ERROR_INTERNAL,
                              "cuEventRecord");
          s != UT_OK) {
        d->api->EventDestroy(e->event);
        return s;
      }
      *event = e.release();
      return UT_OK;
    }
    if (op != UT_TIMER_ELAPSED || !event || !*event || !start || !elapsed_ms)
      return fail(err, UT_ERROR_INVALID, "cuda: bad timer call");
    float ms = 0;
    if (ut_status s = check(err, *d, d->api->EventElapsedTime(&ms, start->event, (*event)->event),
                            UT_ERROR_INTERNAL, "cuEventElapsedTime");
        s != UT_OK)
      return s;
    *elapsed_ms = ms;
    return UT_OK;
  });
}

void release(ut_release_kind kind, void* handle) {
  if (!handle)
    return;
  const DriverContext* d = driver(nullptr);
  switch (kind) {
  case UT_RELEASE_BINARY:
    delete static_cast<ut_binary*>(handle);
    return;
  case UT_RELEASE_KERNEL: {
    auto* k = static_cast<ut_kernel*>(handle);
    if (d)
      d->api->ModuleUnload(k->module);
    delete k;
    return;
  }
  case UT_RELEASE_EVENT: {
    auto* e = static_cast<ut_event*>(handle);
    if (d)
      d->api->EventDestroy(e->event);
    delete e;
    return;
  }
  }
}

const ut_device_api kApi = {UT_DEVICE_ABI_VERSION,
                            0,
                            describe,
                            alloc,
                            free_buffer,
                            copy_in,
                            copy_out,
                            copy,
                            compile,
                            load,
                            launch,
                            synchronize,
                            timer,
                            release};

} // namespace

} // namespace unitile::cuda

extern "C" UT_PLUGIN_EXPORT const ut_device_api* unitile_device_plugin(void) {
  return &unitile::cuda::kApi;
}
