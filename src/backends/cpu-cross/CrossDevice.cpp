// The cpu-cross device plugin: the c dialect compiled by a cross compiler for another
// CPU (aarch64, riscv64) and run under qemu-user by a kernel server, behind the 12-call
// ABI. One source, built once per cross HCD (CrossDeviceConfig.h says which).
//
// Buffers are memfds mapped by both processes, so copies never cross the socket; only
// map, load and launch requests do, each answered before the call returns, so every
// call completes before it returns and synchronize has nothing to wait for.
#include "CrossDeviceConfig.h"
#include "CrossPlugin.h"
#include "SharedObjectCompiler.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

struct ut_event {
  std::chrono::steady_clock::time_point at;
};

namespace unitile::cross {

ut_status fail(ut_error* err, ut_status status, const std::string& message) {
  if (err)
    std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
  return status;
}

namespace {

const std::string kDevice = UT_CROSS_DEVICE_NAME;

// Runs `body`, turning any exception into a status: nothing may cross the C ABI.
template <typename F> ut_status guarded(ut_error* err, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(err, UT_ERROR_MEMORY, kDevice + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(err, UT_ERROR_INTERNAL, kDevice + ": " + e.what());
  } catch (...) {
    return fail(err, UT_ERROR_INTERNAL, kDevice + ": unknown internal error");
  }
}

// A memfd holding `bytes` (zero-filled), or -1 with errno set.
int new_memfd(const char* name, size_t bytes) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

ut_status describe(ut_device_info* info, ut_error* err) {
  if (!info)
    return fail(err, UT_ERROR_INVALID, kDevice + ": describe: info is NULL");
  return guarded(err, [&] {
    // A device whose compiler, emulator or server is missing describes itself as
    // unavailable, with the reason: that is what `unitile devices` shows.
    ut_status s = KernelServer::instance().start(err);
    if (s != UT_OK)
      return s;
    static const std::string version = cpu::compiler_version(toolchain().compiler);
    info->name = UT_CROSS_DEVICE_NAME;
    info->hcd_toml = kHcdToml;
    info->hcd_builtin = nullptr;
    info->toolchain_version = version.c_str();
    return UT_OK;
  });
}

ut_status alloc(size_t bytes, ut_buffer** out, ut_error* err) {
  if (!out)
    return fail(err, UT_ERROR_INVALID, kDevice + ": alloc: out is NULL");
  return guarded(err, [&] {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t mapped = bytes == 0 ? page : (bytes + page - 1) / page * page;
    int fd = new_memfd("unitile-buffer", mapped);
    if (fd < 0)
      return fail(err, UT_ERROR_MEMORY,
                  kDevice + ": cannot allocate " + std::to_string(bytes) +
                      " bytes: " + std::strerror(errno));
    void* data = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) {
      int saved = errno;
      close(fd);
      return fail(err, UT_ERROR_MEMORY,
                  kDevice + ": cannot map " + std::to_string(bytes) +
                      " bytes: " + std::strerror(saved));
    }
    KernelServer& server = KernelServer::instance();
    auto buffer =
        std::make_unique<ut_buffer>(ut_buffer{data, bytes, mapped, server.take_buffer_slot()});
    ut_x_request r{};
    r.op = UT_X_MAP;
    r.slot = buffer->slot;
    r.bytes = mapped;
    ut_status s = server.call(r, nullptr, 0, fd, err);
    close(fd);
    if (s != UT_OK) {
      munmap(data, mapped);
      server.return_buffer_slot(buffer->slot);
      return s;
    }
    *out = buffer.release();
    return UT_OK;
  });
}

void free_buffer(ut_buffer* b) {
  if (!b)
    return;
  KernelServer& server = KernelServer::instance();
  ut_x_request r{};
  r.op = UT_X_UNMAP;
  r.slot = b->slot;
  ut_error ignored;
  if (guarded(&ignored, [&] { return server.call(r, nullptr, 0, -1, &ignored); }) == UT_OK)
    server.return_buffer_slot(b->slot); // a slot the server may still hold is never reused
  munmap(b->data, b->mapped);
  delete b;
}

bool in_range(const ut_buffer* b, size_t offset, size_t bytes) {
  return b && offset <= b->bytes && bytes <= b->bytes - offset;
}

ut_status range_error(ut_error* err, const char* call, const ut_buffer* b, size_t offset,
                      size_t bytes) {
  if (!b)
    return fail(err, UT_ERROR_INVALID, kDevice + ": " + call + ": buffer is NULL");
  return fail(err, UT_ERROR_INVALID,
              kDevice + ": " + call + ": bytes [" + std::to_string(offset) + ", " +
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

ut_status compile(const char* source, const char* options, ut_binary** out, const void** data,
                  size_t* size, ut_error* err) {
  if (!source || !out || !data || !size)
    return fail(err, UT_ERROR_INVALID, kDevice + ": compile: NULL argument");
  return guarded(err, [&] {
    auto binary = std::make_unique<ut_binary>();
    std::string message;
    ut_status s = cpu::compile_shared_object(kDevice, source, options, &binary->bytes, &message);
    if (s != UT_OK)
      return fail(err, s, message);
    *data = binary->bytes.data();
    *size = binary->bytes.size();
    *out = binary.release();
    return UT_OK;
  });
}

ut_status load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err) {
  if (!data || !size || !entry || !out)
    return fail(err, UT_ERROR_INVALID, kDevice + ": load: NULL or empty argument");
  const size_t entry_bytes = std::strlen(entry);
  if (entry_bytes == 0 || entry_bytes >= UT_X_MAX_ENTRY)
    return fail(err, UT_ERROR_INVALID, kDevice + ": load: entry name empty or too long");
  return guarded(err, [&] {
    int fd = new_memfd("unitile-kernel", 0);
    if (fd < 0)
      return fail(err, UT_ERROR_INTERNAL,
                  kDevice + ": cannot create a memfd: " + std::strerror(errno));
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t done = 0; done < size;) {
      ssize_t n = write(fd, p + done, size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        int saved = errno;
        close(fd);
        return fail(err, UT_ERROR_INTERNAL,
                    kDevice + ": cannot write the binary to a memfd: " + std::strerror(saved));
      }
      done += static_cast<size_t>(n);
    }
    KernelServer& server = KernelServer::instance();
    auto kernel = std::make_unique<ut_kernel>(ut_kernel{server.take_kernel_slot()});
    ut_x_request r{};
    r.op = UT_X_LOAD;
    r.slot = kernel->slot;
    r.bytes = entry_bytes;
    ut_status s = server.call(r, entry, entry_bytes, fd, err);
    close(fd);
    if (s != UT_OK) {
      server.return_kernel_slot(kernel->slot);
      return s;
    }
    *out = kernel.release();
    return UT_OK;
  });
}

ut_status launch(ut_kernel* kernel, const uint32_t grid[3], const uint32_t block[3],
                 const ut_arg* args, uint32_t nargs, ut_error* err) {
  if (!kernel || !grid || !block || (nargs && !args))
    return fail(err, UT_ERROR_INVALID, kDevice + ": launch: NULL argument");
  if (block[0] != 1 || block[1] != 1 || block[2] != 1)
    return fail(err, UT_ERROR_INVALID,
                kDevice + ": launch: blocks have one thread on this device, got block {" +
                    std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                    std::to_string(block[2]) + "}");
  if (nargs > UT_X_MAX_ARGS)
    return fail(err, UT_ERROR_INVALID,
                kDevice + ": launch: " + std::to_string(nargs) + " arguments, at most " +
                    std::to_string(UT_X_MAX_ARGS));
  return guarded(err, [&] {
    std::vector<ut_x_arg> wire(nargs);
    for (uint32_t a = 0; a < nargs; ++a) {
      switch (args[a].kind) {
      case UT_ARG_BUFFER:
        if (!args[a].value.buffer)
          return fail(err, UT_ERROR_INVALID,
                      kDevice + ": launch: argument " + std::to_string(a) + " is a NULL buffer");
        wire[a] = {UT_X_ARG_BUFFER, 0, args[a].value.buffer->slot};
        break;
      case UT_ARG_I64:
        wire[a].kind = UT_X_ARG_I64;
        std::memcpy(&wire[a].bits, &args[a].value.i64, sizeof wire[a].bits);
        break;
      case UT_ARG_F64:
        wire[a].kind = UT_X_ARG_F64;
        std::memcpy(&wire[a].bits, &args[a].value.f64, sizeof wire[a].bits);
        break;
      default:
        return fail(err, UT_ERROR_INVALID,
                    kDevice + ": launch: argument " + std::to_string(a) + " has unknown kind " +
                        std::to_string(args[a].kind));
      }
    }
    ut_x_request r{};
    r.op = UT_X_LAUNCH;
    r.slot = kernel->slot;
    r.nargs = nargs;
    r.grid[0] = grid[0];
    r.grid[1] = grid[1];
    r.grid[2] = grid[2];
    return KernelServer::instance().call(r, wire.data(), wire.size() * sizeof(ut_x_arg), -1, err);
  });
}

ut_status synchronize(ut_error*) {
  return UT_OK; // every call has completed when it returns
}

ut_status timer(ut_timer_op op, ut_event** event, const ut_event* start, double* elapsed_ms,
                ut_error* err) {
  if (!event)
    return fail(err, UT_ERROR_INVALID, kDevice + ": timer: event is NULL");
  if (op == UT_TIMER_RECORD) {
    auto* e = new (std::nothrow) ut_event{std::chrono::steady_clock::now()};
    if (!e)
      return fail(err, UT_ERROR_MEMORY, kDevice + ": out of host memory");
    *event = e;
    return UT_OK;
  }
  if (op != UT_TIMER_ELAPSED)
    return fail(err, UT_ERROR_INVALID, kDevice + ": timer: unknown op " + std::to_string(op));
  if (!start || !*event || !elapsed_ms)
    return fail(err, UT_ERROR_INVALID, kDevice + ": timer: elapsed needs two events");
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
  case UT_RELEASE_KERNEL: {
    auto* k = static_cast<ut_kernel*>(handle);
    ut_x_request r{};
    r.op = UT_X_UNLOAD;
    r.slot = k->slot;
    ut_error ignored;
    KernelServer& server = KernelServer::instance();
    if (guarded(&ignored, [&] { return server.call(r, nullptr, 0, -1, &ignored); }) == UT_OK)
      server.return_kernel_slot(k->slot);
    delete k;
    return;
  }
  case UT_RELEASE_EVENT:
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

} // namespace unitile::cross

extern "C" UT_PLUGIN_EXPORT const ut_device_api* unitile_device_plugin(void) {
  return &unitile::cross::kApi;
}
