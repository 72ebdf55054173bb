// The opencl device plugin: OpenCL C kernels built and run through any OpenCL ICD (PoCL's
// CPU device in tests), behind the 12-call ABI of unitile/device.h.
//
// This file and pocl.toml are a vendor's whole burden: the shared printer writes the
// OpenCL C (dialect "opencl"), the runtime does everything else. It includes nothing of
// Unitile but the ABI header, so it builds outside the tree against an installed Unitile.
//
//  - Device: the first device of the first platform that has one, or of the first
//    platform whose name contains $UNITILE_OPENCL_PLATFORM. One context, one in-order
//    queue with profiling on, opened at first use.
//  - HCD: pocl.toml, compiled in, with the limits the driver reports written over it
//    (compute units, work-group and work-item sizes, local memory, vector width).
//  - Binary: the program binary clGetProgramInfo returns; load rebuilds from it.
//  - Launch: grid x block work-items in work-groups of `block`; timer: device-timed
//    markers (CL_PROFILING_COMMAND_END of each).
//  - PoCL's kernel cache: one directory per live process (see pocl_cache_slot).
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "unitile/device.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <string>
#include <vector>

struct ut_buffer {
  cl_mem mem;
  size_t bytes;
};
struct ut_binary {
  std::vector<unsigned char> bytes;
};
struct ut_kernel {
  cl_kernel kernel;
  std::string program_key; // entry of the program cache this kernel holds
  size_t max_group;        // CL_KERNEL_WORK_GROUP_SIZE
  cl_uint nargs;
};
struct ut_event {
  cl_event event;
};

namespace {

constexpr const char kHcdText[] =
#include "pocl_hcd.inc"
    ;

ut_status fail(ut_error* err, ut_status status, const std::string& message) {
  if (err)
    std::snprintf(err->message, sizeof err->message, "opencl: %s", message.c_str());
  return status;
}

std::string cl_call(const char* what, cl_int code) {
  return std::string(what) + " failed with OpenCL error " + std::to_string(code);
}

// The device, its queue and what describe reports; `status` says whether it opened.
struct Device {
  ut_status status = UT_OK;
  std::string error;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string hcd, toolchain;
  size_t max_group = 1, max_item[3] = {1, 1, 1};
  cl_ulong local_mem = 0;
  std::mutex mutex; // kernel arguments are set and enqueued under it
  // Programs by binary bytes, each with the number of kernels loaded from it.
  std::map<std::string, std::pair<cl_program, int>> programs;
};

std::string platform_info(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  clGetPlatformInfo(p, what, 0, nullptr, &n);
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  return s.c_str();
}

std::string device_info(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  clGetDeviceInfo(d, what, 0, nullptr, &n);
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  return s.c_str();
}

template <typename T> T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

// `toml` with the value of the first line `key = ...` (after the text `after`) replaced.
std::string with_value(std::string toml, const std::string& key, const std::string& value,
                       const std::string& after = "") {
  size_t at = toml.find("\n" + key + " = ", after.empty() ? 0 : toml.find(after));
  if (at == std::string::npos)
    return toml;
  size_t start = at + key.size() + 4, end = toml.find('\n', start);
  return toml.replace(start, end - start, value);
}

// PoCL's program binary is its cache directory for the program, serialized: built while
// another process writes work-group functions into that shared directory, it carries
// their files, half-written ones too, and the runtime's kernel cache keeps it (a kernel
// then fails to load until that cache is cleared). So each live process gets a cache
// directory no other live process uses: the first of $UNITILE_CACHE_DIR/pocl/N (else
// ~/.cache/unitile/pocl/N) whose lock it can take, held until exit, so later processes
// reuse a warm one. A POCL_CACHE_DIR set by the user is left alone.
void pocl_cache_slot() {
  if (std::getenv("POCL_CACHE_DIR"))
    return;
  std::string base;
  if (const char* u = std::getenv("UNITILE_CACHE_DIR"); u && *u)
    base = std::string(u) + "/pocl";
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::string(h) + "/.cache/unitile/pocl";
  else
    return;
  for (size_t at = base.find('/', 1);; at = base.find('/', at + 1)) {
    mkdir(base.substr(0, at).c_str(), 0755); // mkdir -p; failures show at open below
    if (at == std::string::npos)
      break;
  }
  for (int slot = 0; slot < 64; ++slot) {
    std::string dir = base + "/" + std::to_string(slot);
    int fd = open((dir + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) { // fd stays open: the lock lives until exit
      mkdir(dir.c_str(), 0755);
      setenv("POCL_CACHE_DIR", dir.c_str(), 1);
      return;
    }
    close(fd);
  }
}

void open_device(Device& d) {
  pocl_cache_slot();
  cl_uint n = 0;
  cl_int rc = clGetPlatformIDs(0, nullptr, &n);
  if (rc != CL_SUCCESS || n == 0) {
    d.status = UT_ERROR_UNAVAILABLE;
    d.error = "no OpenCL platform found (clGetPlatformIDs returned " + std::to_string(rc) +
              "); install an ICD such as pocl-opencl-icd, or check OCL_ICD_VENDORS";
    return;
  }
  std::vector<cl_platform_id> platforms(n);
  clGetPlatformIDs(n, platforms.data(), nullptr);
  const char* wanted = std::getenv("UNITILE_OPENCL_PLATFORM");
  std::string seen;
  for (cl_platform_id p : platforms) {
    std::string name = platform_info(p, CL_PLATFORM_NAME);
    seen += (seen.empty() ? "" : ", ") + name;
    if (wanted && *wanted && name.find(wanted) == std::string::npos)
      continue;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d.device, nullptr) == CL_SUCCESS) {
      d.platform = p;
      break;
    }
  }
  if (!d.platform) {
    d.status = UT_ERROR_UNAVAILABLE;
    d.error = std::string("no OpenCL device on ") +
              (wanted && *wanted
                   ? "a platform matching UNITILE_OPENCL_PLATFORM='" + std::string(wanted) + "'"
                   : std::string("any platform")) +
              " (platforms: " + seen + ")";
    return;
  }
  d.context = clCreateContext(nullptr, 1, &d.device, nullptr, nullptr, &rc);
  if (rc == CL_SUCCESS)
    d.queue = clCreateCommandQueue(d.context, d.device, CL_QUEUE_PROFILING_ENABLE, &rc);
  if (rc != CL_SUCCESS) {
    d.status = UT_ERROR_UNAVAILABLE;
    d.error = cl_call("creating a context and queue", rc);
    return;
  }
  d.max_group = device_value<size_t>(d.device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  clGetDeviceInfo(d.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof d.max_item, d.max_item, nullptr);
  d.local_mem = device_value<cl_ulong>(d.device, CL_DEVICE_LOCAL_MEM_SIZE);
  std::string hcd = kHcdText;
  hcd = with_value(hcd, "units",
                   std::to_string(device_value<cl_uint>(d.device, CL_DEVICE_MAX_COMPUTE_UNITS)));
  hcd = with_value(hcd, "max_threads_per_block", std::to_string(d.max_group));
  hcd = with_value(hcd, "max_block",
                   "[" + std::to_string(d.max_item[0]) + ", " + std::to_string(d.max_item[1]) +
                       ", " + std::to_string(d.max_item[2]) + "]");
  hcd = with_value(hcd, "shared_memory_per_block", std::to_string(d.local_mem));
  if (cl_ulong llc = device_value<cl_ulong>(d.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE))
    hcd = with_value(hcd, "size", "\"" + std::to_string(llc) + "B\"", "name = \"L3\"");
  cl_uint float_width = device_value<cl_uint>(d.device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  if (float_width > 0)
    hcd = with_value(hcd, "vector_bits", std::to_string(32 * float_width));
  // A CPU device (PoCL) runs work-groups as threads of this host, so its cores' caches
  // are the device's: OpenCL reports only the last level, glibc knows L1d and L2. Its
  // 512-bit vectors (AVX-512) come with 32 registers, as the cpu device's HCD says.
  if (device_value<cl_device_type>(d.device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) {
    for (auto [level, name] : {std::pair{_SC_LEVEL1_DCACHE_SIZE, "L1"}, std::pair{_SC_LEVEL2_CACHE_SIZE, "L2"}})
      if (long bytes = sysconf(level); bytes > 0)
        hcd = with_value(hcd, "size", "\"" + std::to_string(bytes) + "B\"", std::string("name = \"") + name + "\"");
    if (float_width >= 16)
      hcd = with_value(hcd, "vector_registers", "32");
  }
  d.hcd = hcd;
  d.toolchain = platform_info(d.platform, CL_PLATFORM_VERSION) + "; " +
                device_info(d.device, CL_DEVICE_NAME) + "; driver " +
                device_info(d.device, CL_DRIVER_VERSION);
}

Device& device() {
  static Device* d = [] {
    auto* dev = new Device; // never destroyed: the ICD may be unloaded first at exit
    open_device(*dev);
    return dev;
  }();
  return *d;
}

// Checks that the device opened; on failure fills `err` and returns false.
bool usable(ut_error* err, ut_status* status) {
  Device& d = device();
  if (d.status == UT_OK)
    return true;
  *status = fail(err, d.status, d.error);
  return false;
}

#define UT_NEED_DEVICE(err)                                                                        \
  do {                                                                                             \
    ut_status s_;                                                                                  \
    if (!usable(err, &s_))                                                                         \
      return s_;                                                                                   \
  } while (0)

ut_status describe(ut_device_info* info, ut_error* err) {
  if (!info)
    return fail(err, UT_ERROR_INVALID, "describe: info is NULL");
  UT_NEED_DEVICE(err);
  info->name = "opencl";
  info->hcd_toml = device().hcd.c_str();
  info->hcd_builtin = nullptr;
  info->toolchain_version = device().toolchain.c_str();
  return UT_OK;
}

ut_status alloc(size_t bytes, ut_buffer** out, ut_error* err) {
  if (!out)
    return fail(err, UT_ERROR_INVALID, "alloc: out is NULL");
  UT_NEED_DEVICE(err);
  cl_int rc = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(device().context, CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &rc);
  if (rc != CL_SUCCESS)
    return fail(err, UT_ERROR_MEMORY,
                cl_call(("clCreateBuffer of " + std::to_string(bytes) + " bytes").c_str(), rc));
  *out = new (std::nothrow) ut_buffer{mem, bytes};
  if (!*out) {
    clReleaseMemObject(mem);
    return fail(err, UT_ERROR_MEMORY, "out of host memory");
  }
  return UT_OK;
}

void free_buffer(ut_buffer* b) {
  if (!b)
    return;
  clReleaseMemObject(b->mem);
  delete b;
}

bool in_range(const ut_buffer* b, size_t offset, size_t bytes) {
  return b && offset <= b->bytes && bytes <= b->bytes - offset;
}

ut_status range_error(ut_error* err, const char* call, const ut_buffer* b, size_t offset,
                      size_t bytes) {
  if (!b)
    return fail(err, UT_ERROR_INVALID, std::string(call) + ": buffer is NULL");
  return fail(err, UT_ERROR_INVALID,
              std::string(call) + ": bytes [" + std::to_string(offset) + ", " +
                  std::to_string(offset + bytes) + ") outside a buffer of " +
                  std::to_string(b->bytes));
}

ut_status copy_in(ut_buffer* dst, size_t offset, const void* src, size_t bytes, ut_error* err) {
  if (!in_range(dst, offset, bytes))
    return range_error(err, "copy_in", dst, offset, bytes);
  if (bytes == 0)
    return UT_OK;
  cl_int rc = clEnqueueWriteBuffer(device().queue, dst->mem, CL_TRUE, offset, bytes, src, 0,
                                   nullptr, nullptr);
  return rc == CL_SUCCESS ? UT_OK : fail(err, UT_ERROR_LAUNCH, cl_call("clEnqueueWriteBuffer", rc));
}

ut_status copy_out(void* dst, const ut_buffer* src, size_t offset, size_t bytes, ut_error* err) {
  if (!in_range(src, offset, bytes))
    return range_error(err, "copy_out", src, offset, bytes);
  if (bytes == 0)
    return UT_OK;
  cl_int rc = clEnqueueReadBuffer(device().queue, src->mem, CL_TRUE, offset, bytes, dst, 0, nullptr,
                                  nullptr);
  return rc == CL_SUCCESS ? UT_OK : fail(err, UT_ERROR_LAUNCH, cl_call("clEnqueueReadBuffer", rc));
}

ut_status copy(ut_buffer* dst, size_t dst_offset, const ut_buffer* src, size_t src_offset,
               size_t bytes, ut_error* err) {
  if (!in_range(dst, dst_offset, bytes))
    return range_error(err, "copy", dst, dst_offset, bytes);
  if (!in_range(src, src_offset, bytes))
    return range_error(err, "copy", src, src_offset, bytes);
  if (bytes == 0)
    return UT_OK;
  cl_int rc = clEnqueueCopyBuffer(device().queue, src->mem, dst->mem, src_offset, dst_offset, bytes,
                                  0, nullptr, nullptr);
  return rc == CL_SUCCESS ? UT_OK : fail(err, UT_ERROR_LAUNCH, cl_call("clEnqueueCopyBuffer", rc));
}

std::string build_log(cl_program program) {
  size_t n = 0;
  clGetProgramBuildInfo(program, device().device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  clGetProgramBuildInfo(program, device().device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  return log.c_str();
}

// Builds `program` with `options`; on failure releases it and reports the build log.
ut_status build(cl_program program, const std::string& options, const char* what, ut_error* err) {
  cl_int rc = clBuildProgram(program, 1, &device().device, options.c_str(), nullptr, nullptr);
  if (rc == CL_SUCCESS)
    return UT_OK;
  std::string log = build_log(program);
  clReleaseProgram(program);
  return fail(err, UT_ERROR_COMPILE,
              std::string(what) + " failed (OpenCL error " + std::to_string(rc) +
                  "); build log:\n" + (log.empty() ? "(empty)" : log));
}

// The runtime passes the HCD's compiler name, then its flags; the ICD is the compiler.
std::string build_options(const char* options) {
  std::string o = options ? options : "";
  size_t start = o.find_first_not_of(' ');
  if (start != std::string::npos && o[start] != '-')
    start = o.find(' ', start);
  return start == std::string::npos ? std::string() : o.substr(start);
}

ut_status compile(const char* source, const char* options, ut_binary** out, const void** data,
                  size_t* size, ut_error* err) {
  if (!source || !out || !data || !size)
    return fail(err, UT_ERROR_INVALID, "compile: NULL argument");
  UT_NEED_DEVICE(err);
  cl_int rc = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(device().context, 1, &source, nullptr, &rc);
  if (rc != CL_SUCCESS)
    return fail(err, UT_ERROR_COMPILE, cl_call("clCreateProgramWithSource", rc));
  const std::string opts = build_options(options);
  if (ut_status s = build(program, opts, ("clBuildProgram with '" + opts + "'").c_str(), err))
    return s;
  size_t n = 0;
  clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, nullptr);
  auto* bin = new (std::nothrow) ut_binary;
  if (!bin) {
    clReleaseProgram(program);
    return fail(err, UT_ERROR_MEMORY, "out of host memory");
  }
  bin->bytes.resize(n);
  unsigned char* bytes = bin->bytes.data();
  rc = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bytes, &bytes, nullptr);
  clReleaseProgram(program);
  if (rc != CL_SUCCESS || n == 0) {
    delete bin;
    return fail(err, UT_ERROR_COMPILE, cl_call("clGetProgramInfo(CL_PROGRAM_BINARIES)", rc));
  }
  *out = bin;
  *data = bin->bytes.data();
  *size = bin->bytes.size();
  return UT_OK;
}

// The program built from `key`'s bytes, shared by every kernel loaded from them.
ut_status program_for(const std::string& key, cl_program* out, ut_error* err) {
  Device& d = device();
  auto it = d.programs.find(key);
  if (it != d.programs.end()) {
    ++it->second.second;
    *out = it->second.first;
    return UT_OK;
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(key.data());
  size_t size = key.size();
  cl_int binary_status = CL_SUCCESS, rc = CL_SUCCESS;
  cl_program p =
      clCreateProgramWithBinary(d.context, 1, &d.device, &size, &bytes, &binary_status, &rc);
  if (rc != CL_SUCCESS || binary_status != CL_SUCCESS)
    return fail(err, UT_ERROR_COMPILE,
                "the binary is not a program for this OpenCL device (clCreateProgramWithBinary: " +
                    std::to_string(rc) + ", binary status " + std::to_string(binary_status) + ")");
  if (ut_status s = build(p, "", "building the program binary", err))
    return s;
  d.programs.emplace(key, std::make_pair(p, 1));
  *out = p;
  return UT_OK;
}

void drop_program(const std::string& key) {
  Device& d = device();
  auto it = d.programs.find(key);
  if (it == d.programs.end() || --it->second.second > 0)
    return;
  clReleaseProgram(it->second.first);
  d.programs.erase(it);
}

ut_status load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err) {
  if (!data || !size || !entry || !out)
    return fail(err, UT_ERROR_INVALID, "load: NULL or empty argument");
  UT_NEED_DEVICE(err);
  std::lock_guard<std::mutex> lock(device().mutex);
  std::string key(static_cast<const char*>(data), size);
  cl_program program = nullptr;
  if (ut_status s = program_for(key, &program, err))
    return s;
  cl_int rc = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program, entry, &rc);
  if (rc != CL_SUCCESS) {
    drop_program(key);
    return fail(err, UT_ERROR_INVALID,
                cl_call(("clCreateKernel of entry '" + std::string(entry) + "'").c_str(), rc));
  }
  auto* kernel = new (std::nothrow) ut_kernel{k, key, 0, 0};
  if (!kernel) {
    clReleaseKernel(k);
    drop_program(key);
    return fail(err, UT_ERROR_MEMORY, "out of host memory");
  }
  clGetKernelWorkGroupInfo(k, device().device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel->max_group,
                           &kernel->max_group, nullptr);
  clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof kernel->nargs, &kernel->nargs, nullptr);
  *out = kernel;
  return UT_OK;
}

// Sets argument `a` as the dialect declares it: buffers as pointers, integer params as
// long, f64 params as double and every other float param as float.
cl_int set_arg(cl_kernel k, cl_uint index, const ut_arg& a) {
  switch (a.kind) {
  case UT_ARG_BUFFER:
    return clSetKernelArg(k, index, sizeof(cl_mem), &a.value.buffer->mem);
  case UT_ARG_I64: {
    cl_long v = a.value.i64;
    return clSetKernelArg(k, index, sizeof v, &v);
  }
  case UT_ARG_F64:
    if (a.dtype == 3) { // f64
      cl_double v = a.value.f64;
      return clSetKernelArg(k, index, sizeof v, &v);
    } else {
      cl_float v = static_cast<cl_float>(a.value.f64);
      return clSetKernelArg(k, index, sizeof v, &v);
    }
  }
  return CL_INVALID_ARG_VALUE;
}

ut_status launch(ut_kernel* kernel, const uint32_t grid[3], const uint32_t block[3],
                 const ut_arg* args, uint32_t nargs, ut_error* err) {
  if (!kernel || !grid || !block || (nargs && !args))
    return fail(err, UT_ERROR_INVALID, "launch: NULL argument");
  if (nargs != kernel->nargs)
    return fail(err, UT_ERROR_INVALID,
                "launch: the kernel takes " + std::to_string(kernel->nargs) + " arguments, got " +
                    std::to_string(nargs));
  Device& d = device();
  const size_t threads = size_t{block[0]} * block[1] * block[2];
  std::string dims = "{" + std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                     std::to_string(block[2]) + "}";
  for (int a = 0; a < 3; ++a)
    if (block[a] == 0 || block[a] > d.max_item[a])
      return fail(err, UT_ERROR_LAUNCH,
                  "work-group " + dims + " exceeds the device's work-item limit " +
                      std::to_string(d.max_item[a]) + " on axis " + "xyz"[a]);
  if (threads > kernel->max_group)
    return fail(err, UT_ERROR_LAUNCH,
                "work-group " + dims + " has " + std::to_string(threads) +
                    " work-items; this kernel allows at most " + std::to_string(kernel->max_group) +
                    " on this device");
  size_t global[3], local[3];
  for (int a = 0; a < 3; ++a) {
    global[a] = size_t{grid[a]} * block[a];
    local[a] = block[a];
  }
  if (global[0] * global[1] * global[2] == 0)
    return UT_OK;
  std::lock_guard<std::mutex> lock(d.mutex);
  for (uint32_t a = 0; a < nargs; ++a) {
    if (args[a].kind == UT_ARG_BUFFER && !args[a].value.buffer)
      return fail(err, UT_ERROR_INVALID, "launch: argument " + std::to_string(a) + " is NULL");
    if (cl_int rc = set_arg(kernel->kernel, a, args[a]))
      return fail(err, UT_ERROR_INVALID,
                  cl_call(("clSetKernelArg " + std::to_string(a)).c_str(), rc));
  }
  cl_int rc = clEnqueueNDRangeKernel(d.queue, kernel->kernel, 3, nullptr, global, local, 0, nullptr,
                                     nullptr);
  if (rc != CL_SUCCESS)
    return fail(err, UT_ERROR_LAUNCH,
                cl_call(("clEnqueueNDRangeKernel with work-group " + dims).c_str(), rc));
  return UT_OK;
}

ut_status synchronize(ut_error* err) {
  UT_NEED_DEVICE(err);
  cl_int rc = clFinish(device().queue);
  return rc == CL_SUCCESS ? UT_OK : fail(err, UT_ERROR_LAUNCH, cl_call("clFinish", rc));
}

ut_status timer(ut_timer_op op, ut_event** event, const ut_event* start, double* elapsed_ms,
                ut_error* err) {
  if (!event)
    return fail(err, UT_ERROR_INVALID, "timer: event is NULL");
  UT_NEED_DEVICE(err);
  if (op == UT_TIMER_RECORD) {
    cl_event e = nullptr;
    cl_int rc = clEnqueueMarkerWithWaitList(device().queue, 0, nullptr, &e);
    if (rc != CL_SUCCESS)
      return fail(err, UT_ERROR_LAUNCH, cl_call("clEnqueueMarkerWithWaitList", rc));
    *event = new (std::nothrow) ut_event{e};
    if (!*event) {
      clReleaseEvent(e);
      return fail(err, UT_ERROR_MEMORY, "out of host memory");
    }
    return UT_OK;
  }
  if (op != UT_TIMER_ELAPSED || !start || !*event || !elapsed_ms)
    return fail(err, UT_ERROR_INVALID, "timer: elapsed needs two recorded events");
  cl_event both[2] = {start->event, (*event)->event};
  cl_ulong t0 = 0, t1 = 0;
  cl_int rc = clWaitForEvents(2, both);
  if (rc == CL_SUCCESS)
    rc = clGetEventProfilingInfo(both[0], CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr);
  if (rc == CL_SUCCESS)
    rc = clGetEventProfilingInfo(both[1], CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
  if (rc != CL_SUCCESS)
    return fail(err, UT_ERROR_LAUNCH, cl_call("reading profiling events", rc));
  *elapsed_ms = (static_cast<double>(t1) - static_cast<double>(t0)) * 1e-6;
  return UT_OK;
}

void release(ut_release_kind kind, void* handle) {
  if (!handle)
    return;
  switch (kind) {
  case UT_RELEASE_BINARY:
    delete static_cast<ut_binary*>(handle);
    return;
  case UT_RELEASE_KERNEL: {
    auto* k = static_cast<ut_kernel*>(handle);
    std::lock_guard<std::mutex> lock(device().mutex);
    clReleaseKernel(k->kernel);
    drop_program(k->program_key);
    delete k;
    return;
  }
  case UT_RELEASE_EVENT:
    clReleaseEvent(static_cast<ut_event*>(handle)->event);
    delete static_cast<ut_event*>(handle);
    return;
  }
}

const ut_device_api kApi = {
    UT_DEVICE_ABI_VERSION,
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
    release,
};

} // namespace

extern "C" UT_PLUGIN_EXPORT const ut_device_api* unitile_device_plugin(void) {
  return &kApi;
}
