// The cpu device plugin: generated C compiled by the host compiler into a shared object,
// loaded, and run block by block on a persistent thread pool, behind the 12-call ABI.
//
// Thread count: UNITILE_NUM_THREADS when set (a positive integer), else the CPUs in this
// process's affinity mask. It is read at every launch, so a process may change it
// between launches; the pool is rebuilt when it does.
#include "CpuPlugin.h"

#include <sched.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

struct ut_event {
  std::chrono::steady_clock::time_point at;
};

namespace unitile::cpu {

ut_status fail(ut_error* err, ut_status status, const std::string& message) {
  if (err)
    std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
  return status;
}

namespace {

// Runs `body`, turning any exception into a status: nothing may cross the C ABI.
template <typename F> ut_status guarded(ut_error* err, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(err, UT_ERROR_MEMORY, "cpu: out of host memory");
  } catch (const std::exception& e) {
    return fail(err, UT_ERROR_INTERNAL, std::string("cpu: ") + e.what());
  } catch (...) {
    return fail(err, UT_ERROR_INTERNAL, "cpu: unknown internal error");
  }
}

// Threads to run blocks on, or 0 with `err` set when UNITILE_NUM_THREADS is malformed.
unsigned wanted_threads(ut_error* err) {
  const char* env = std::getenv("UNITILE_NUM_THREADS");
  if (env) {
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(env, &end, 10);
    if (*env == '\0' || *end != '\0' || errno != 0 || n < 1 || n > 4096) {
      fail(
          err, UT_ERROR_INVALID,
          std::string("cpu: UNITILE_NUM_THREADS must be a positive integer (at most 4096), got '") +
              env + "'");
      return 0;
    }
    return static_cast<unsigned>(n);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The pool of `threads` threads. A launch holds its pool, so one still running on an
// old pool when the thread count changes keeps that pool alive until it returns.
std::shared_ptr<ThreadPool> pool_for(unsigned threads) {
  static std::mutex mutex;
  static std::shared_ptr<ThreadPool> pool;
  std::lock_guard<std::mutex> lock(mutex);
  if (!pool || pool->threads() != threads)
    pool = std::make_shared<ThreadPool>(threads);
  return pool;
}

ut_status describe(ut_device_info* info, ut_error* err) {
  if (!info)
    return fail(err, UT_ERROR_INVALID, "cpu: describe: info is NULL");
  return guarded(err, [&] {
    info->name = "cpu";
    info->hcd_toml = nullptr;
    info->hcd_builtin = "host-cpu";
    info->toolchain_version = toolchain_version();
    return UT_OK;
  });
}

// UNITILE_HUGE_PAGES=1: buffers of 2 MiB or more are 2 MiB-aligned whole huge pages,
// marked for transparent huge pages (Linux's madvise mode, the default of most
// distributions, gives them only to memory that asks). On a virtual machine, where a
// TLB miss walks two page tables, this speeds up large operands by about 10% (the LM
// head's bf16 B, 768 rows of 100 KB, crosses 768 pages per 32-column micro-panel: one
// thread 30-39 -> 24-25 ms; f32 2048^3 141 -> 124-129 ms). It is off by default, as in
// PyTorch's allocator: with the kernel's default `defrag` setting a fault in such memory
// may compact memory synchronously, and the baselines gain as much or more from it
// (docs/PERFORMANCE.md, "Transparent huge pages").
constexpr size_t kHugePage = size_t{2} << 20;

// Read at every large allocation, like UNITILE_NUM_THREADS at every launch.
size_t buffer_alignment(size_t bytes) {
  if (bytes < kHugePage)
    return 64;
  const char* env = std::getenv("UNITILE_HUGE_PAGES");
  return env && std::strcmp(env, "1") == 0 ? kHugePage : 64;
}

ut_status alloc(size_t bytes, ut_buffer** out, ut_error* err) {
  if (!out)
    return fail(err, UT_ERROR_INVALID, "cpu: alloc: out is NULL");
  const size_t align = buffer_alignment(bytes);
  size_t rounded = (bytes + align - 1) / align * align;
  if (rounded == 0)
    rounded = align;
  void* data = std::aligned_alloc(align, rounded);
  if (!data)
    return fail(err, UT_ERROR_MEMORY, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // A hint only: a kernel without transparent huge pages refuses it, and the buffer is
  // then ordinary memory.
  if (align == kHugePage)
    (void)madvise(data, rounded, MADV_HUGEPAGE);
#endif
  auto* b = new (std::nothrow) ut_buffer{data, bytes, false};
  if (!b) {
    std::free(data);
    return fail(err, UT_ERROR_MEMORY, "cpu: out of host memory");
  }
  *out = b;
  return UT_OK;
}

void free_buffer(ut_buffer* b) {
  if (!b)
    return;
  if (!b->borrowed)
    std::free(b->data);
  delete b;
}

// host_memory.h: cpu buffers are host memory, so tensors can be shared without copies.
void* host_pointer(const ut_buffer* b) { return b ? b->data : nullptr; }

ut_status wrap_host(void* data, size_t bytes, ut_buffer** out, ut_error* err) {
  if (!out || (!data && bytes))
    return fail(err, UT_ERROR_INVALID, "cpu: wrap: out or data is NULL");
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return fail(err, UT_ERROR_INVALID, "cpu: wrap: data is not 8-byte aligned");
  auto* b = new (std::nothrow) ut_buffer{data, bytes, true};
  if (!b)
    return fail(err, UT_ERROR_MEMORY, "cpu: out of host memory");
  *out = b;
  return UT_OK;
}

bool in_range(const ut_buffer* b, size_t offset, size_t bytes) {
  return b && offset <= b->bytes && bytes <= b->bytes - offset;
}

ut_status range_error(ut_error* err, const char* call, const ut_buffer* b, size_t offset,
                      size_t bytes) {
  if (!b)
    return fail(err, UT_ERROR_INVALID, std::string("cpu: ") + call + ": buffer is NULL");
  return fail(err, UT_ERROR_INVALID,
              std::string("cpu: ") + call + ": bytes [" + std::to_string(offset) + ", " +
                  std::to_string(offset + bytes) + ") outside a buffer of " +
                  std::to_string(b->bytes));
}

ut_status copy_in(ut_buffer* dst, size_t offset, const void* src, size_t bytes, ut_error* err) {
  if (!in_range(dst, offset, bytes))
    return range_error(err, "copy_in", dst, offset, bytes);
  if (bytes)
    std::memcpy(static_cast<char*>(dst->data) + offset, src, bytes);
  return UT_OK;
}

ut_status copy_out(void* dst, const ut_buffer* src, size_t offset, size_t bytes, ut_error* err) {
  if (!in_range(src, offset, bytes))
    return range_error(err, "copy_out", src, offset, bytes);
  if (bytes)
    std::memcpy(dst, static_cast<const char*>(src->data) + offset, bytes);
  return UT_OK;
}

ut_status copy(ut_buffer* dst, size_t dst_offset, const ut_buffer* src, size_t src_offset,
               size_t bytes, ut_error* err) {
  if (!in_range(dst, dst_offset, bytes))
    return range_error(err, "copy", dst, dst_offset, bytes);
  if (!in_range(src, src_offset, bytes))
    return range_error(err, "copy", src, src_offset, bytes);
  if (bytes)
    std::memmove(static_cast<char*>(dst->data) + dst_offset,
                 static_cast<const char*>(src->data) + src_offset, bytes);
  return UT_OK;
}

ut_status compile_source(const char* source, const char* options, ut_binary** out,
                         const void** data, size_t* size, ut_error* err) {
  if (!source || !out || !data || !size)
    return fail(err, UT_ERROR_INVALID, "cpu: compile: NULL argument");
  return guarded(err, [&] {
    ut_status s = compile(source, options, out, err);
    if (s == UT_OK) {
      *data = (*out)->bytes.data();
      *size = (*out)->bytes.size();
    }
    return s;
  });
}

ut_status load_binary(const void* data, size_t size, const char* entry, ut_kernel** out,
                      ut_error* err) {
  if (!data || !size || !entry || !out)
    return fail(err, UT_ERROR_INVALID, "cpu: load: NULL or empty argument");
  return guarded(err, [&] { return load(data, size, entry, out, err); });
}

ut_status launch(ut_kernel* kernel, const uint32_t grid[3], const uint32_t block[3],
                 const ut_arg* args, uint32_t nargs, ut_error* err) {
  if (!kernel || !grid || !block || (nargs && !args))
    return fail(err, UT_ERROR_INVALID, "cpu: launch: NULL argument");
  if (block[0] != 1 || block[1] != 1 || block[2] != 1)
    return fail(err, UT_ERROR_INVALID,
                "cpu: launch: blocks have one thread on this device, got block {" +
                    std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                    std::to_string(block[2]) + "}");
  return guarded(err, [&] {
    std::vector<ut_c_arg> c_args(nargs);
    for (uint32_t a = 0; a < nargs; ++a) {
      switch (args[a].kind) {
      case UT_ARG_BUFFER:
        if (!args[a].value.buffer)
          return fail(err, UT_ERROR_INVALID,
                      "cpu: launch: argument " + std::to_string(a) + " is a NULL buffer");
        c_args[a].p = args[a].value.buffer->data;
        break;
      case UT_ARG_I64:
        c_args[a].i = args[a].value.i64;
        break;
      case UT_ARG_F64:
        c_args[a].f = args[a].value.f64;
        break;
      default:
        return fail(err, UT_ERROR_INVALID,
                    "cpu: launch: argument " + std::to_string(a) + " has unknown kind " +
                        std::to_string(args[a].kind));
      }
    }
    unsigned threads = wanted_threads(err);
    if (threads == 0)
      return UT_ERROR_INVALID;
    const uint64_t gx = grid[0], gy = grid[1], gz = grid[2], blocks = gx * gy * gz;
    const ut_c_entry_fn fn = kernel->entry;
    const ut_c_arg* argv = c_args.data();
    // A kernel's streaming (non-temporal) stores are weakly ordered: each run of blocks
    // ends with a store fence, before the pool's completion signal can pass them (the
    // generated entry does not fence per block: docs/ARCHITECTURE.md, "Streaming stores").
    auto run_blocks = [&](uint64_t first, uint64_t last) {
      for (uint64_t b = first; b < last; ++b)
        fn(argv, static_cast<uint32_t>(b % gx), static_cast<uint32_t>(b / gx % gy),
           static_cast<uint32_t>(b / (gx * gy)));
#if defined(__SSE2__)
      _mm_sfence();
#endif
    };
    if (threads == 1 || blocks <= 1) {
      run_blocks(0, blocks);
      return UT_OK;
    }
    // About four contiguous chunks per thread balance uneven blocks without much overhead.
    const uint64_t chunks = std::min<uint64_t>(blocks, 4ull * threads);
    pool_for(threads)->run(
        chunks, [&](uint64_t c) { run_blocks(c * blocks / chunks, (c + 1) * blocks / chunks); });
    return UT_OK;
  });
}

ut_status synchronize(ut_error*) {
  return UT_OK;
} // launches are synchronous

ut_status timer(ut_timer_op op, ut_event** event, const ut_event* start, double* elapsed_ms,
                ut_error* err) {
  if (!event)
    return fail(err, UT_ERROR_INVALID, "cpu: timer: event is NULL");
  if (op == UT_TIMER_RECORD) {
    auto* e = new (std::nothrow) ut_event{std::chrono::steady_clock::now()};
    if (!e)
      return fail(err, UT_ERROR_MEMORY, "cpu: out of host memory");
    *event = e;
    return UT_OK;
  }
  if (op != UT_TIMER_ELAPSED)
    return fail(err, UT_ERROR_INVALID, "cpu: timer: unknown op " + std::to_string(op));
  if (!start || !*event || !elapsed_ms)
    return fail(err, UT_ERROR_INVALID, "cpu: timer: elapsed needs two events");
  *elapsed_ms = std::chrono::duration<double, std::milli>((*event)->at - start->at).count();
  return UT_OK;
}

void release(ut_release_kind kind, void* handle) {
  if (!handle)
    return;
  switch (kind) {
  case UT_RELEASE_BINARY:
    delete static_cast<ut_binary*>(handle);
    return;
  case UT_RELEASE_KERNEL:
    unload(static_cast<ut_kernel*>(handle));
    return;
  case UT_RELEASE_EVENT:
    delete static_cast<ut_event*>(handle);
    return;
  }
}

// Kernels of the c dialect malloc their staging buffers (packed GEMM panels, a few
// hundred KiB) per block and free them at its end. glibc serves such sizes with mmap, or
// trims them off the heap when freed, so every launch page-faults its panels in again
// (a third of a 512^3 GEMM's time here). Keeping allocations up to 64 MiB in the heap,
// and the heap untrimmed below 128 MiB, makes them reuse warm memory, as a caching
// allocator would. Left alone when the user set glibc's own variables.
void keep_staging_memory_warm() {
#if defined(__GLIBC__)
  static const bool done = [] {
    if (!std::getenv("MALLOC_MMAP_THRESHOLD_") && !std::getenv("MALLOC_TRIM_THRESHOLD_")) {
      mallopt(M_MMAP_THRESHOLD, 64 << 20);
      mallopt(M_TRIM_THRESHOLD, 128 << 20);
    }
    return true;
  }();
  (void)done;
#endif
}

const ut_device_api kApi = {
    UT_DEVICE_ABI_VERSION, 0,           describe, alloc,       free_buffer, copy_in, copy_out, copy,
    compile_source,        load_binary, launch,   synchronize, timer,       release,
};

const ut_host_memory_api kHostMemory = {UT_HOST_MEMORY_ABI_VERSION, 0, host_pointer, wrap_host};

} // namespace

} // namespace unitile::cpu

extern "C" UT_PLUGIN_EXPORT const ut_device_api* unitile_device_plugin(void) {
  unitile::cpu::keep_staging_memory_warm();
  return &unitile::cpu::kApi;
}

extern "C" UT_PLUGIN_EXPORT const ut_host_memory_api* unitile_device_host_memory(void) {
  return &unitile::cpu::kHostMemory;
}
