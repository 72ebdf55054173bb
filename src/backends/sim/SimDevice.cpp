// The sim device plugin: executes Loop IR directly, behind the 12-call device ABI.
//
// The sim is the reference every differential test runs against, so it is exact
// (SimNumerics.h gives the semantics) and checks the bounds of every access. Its
// "binary" is the canonical Loop IR text of the program; memory is plain host memory;
// work runs synchronously inside launch. No exception crosses the ABI: each entry point
// catches everything and turns it into a status and a message.
#include "backends/sim/SimKernel.h"

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "unitile/device.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

struct ut_buffer {
  void* data;
  size_t bytes;
};
struct ut_binary {
  std::string text;
};
struct ut_kernel {
  std::unique_ptr<unitile::sim::SimKernel> kernel;
};
struct ut_event {
  std::chrono::steady_clock::time_point at;
};

namespace {

using unitile::sim::SimKernel;

constexpr size_t kAlignment = 64;

void set_error(ut_error* err, const std::string& msg) {
  if (!err) return;
  size_t n = std::min(msg.size(), sizeof(err->message) - 1);
  std::memcpy(err->message, msg.data(), n);
  err->message[n] = '\0';
}

// Run `body`, mapping each exception to its status. `fallback` is the status for
// errors in what the caller handed over (malformed source, unsupported constructs).
template <class F> ut_status guarded(ut_error* err, ut_status fallback, F&& body) {
  try {
    return body();
  } catch (const unitile::sim::LaunchError& e) {
    set_error(err, e.what());
    return UT_ERROR_LAUNCH;
  } catch (const unitile::sim::ArgumentError& e) {
    set_error(err, e.what());
    return UT_ERROR_INVALID;
  } catch (const unitile::UserError& e) {
    set_error(err, e.what());
    return fallback;
  } catch (const unitile::sim::UnsupportedError& e) {
    set_error(err, e.what());
    return fallback;
  } catch (const unitile::InternalError& e) {
    set_error(err, std::string("sim: the Loop IR is inconsistent: ") + e.what());
    return fallback;
  } catch (const std::bad_alloc&) {
    set_error(err, "sim: out of host memory");
    return UT_ERROR_MEMORY;
  } catch (const std::exception& e) {
    set_error(err, std::string("sim: internal error: ") + e.what());
    return UT_ERROR_INTERNAL;
  } catch (...) {
    set_error(err, "sim: internal error: unknown exception");
    return UT_ERROR_INTERNAL;
  }
}

unitile::LoopProgram parse_and_verify(const char* text, size_t size, const char* name) {
  unitile::SourceFile src{name, std::string(text, size)};
  unitile::LoopProgram p = unitile::parse_loop_program(src);
  unitile::verify(p);
  return p;
}

ut_status sim_describe(ut_device_info* info, ut_error* err) {
  if (!info) {
    set_error(err, "sim: describe: info is null");
    return UT_ERROR_INVALID;
  }
  info->name = "sim";
  info->hcd_toml = nullptr;
  info->hcd_builtin = "sim";
  info->toolchain_version = "sim-1";
  return UT_OK;
}

ut_status sim_alloc(size_t bytes, ut_buffer** out, ut_error* err) {
  if (!out) {
    set_error(err, "sim: alloc: out is null");
    return UT_ERROR_INVALID;
  }
  *out = nullptr;
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes) {
    set_error(err, fmt::format("sim: cannot allocate {} bytes", bytes));
    return UT_ERROR_MEMORY;
  }
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (!data) {
    set_error(err, fmt::format("sim: cannot allocate {} bytes", bytes));
    return UT_ERROR_MEMORY;
  }
  auto* b = new (std::nothrow) ut_buffer{data, bytes};
  if (!b) {
    std::free(data);
    set_error(err, "sim: out of host memory");
    return UT_ERROR_MEMORY;
  }
  *out = b;
  return UT_OK;
}

void sim_free(ut_buffer* b) {
  if (!b) return;
  std::free(b->data);
  delete b;
}

bool in_range(const ut_buffer* b, size_t offset, size_t bytes) {
  return offset <= b->bytes && bytes <= b->bytes - offset;
}

ut_status range_error(ut_error* err, const char* call, size_t offset, size_t bytes, size_t size) {
  set_error(err, fmt::format("sim: {}: bytes [{}, {}) are outside the buffer of {} bytes", call, offset,
                             offset + bytes, size));
  return UT_ERROR_INVALID;
}

ut_status sim_copy_in(ut_buffer* dst, size_t offset, const void* src, size_t bytes, ut_error* err) {
  if (!dst || (!src && bytes)) {
    set_error(err, "sim: copy_in: null buffer or source");
    return UT_ERROR_INVALID;
  }
  if (!in_range(dst, offset, bytes)) return range_error(err, "copy_in", offset, bytes, dst->bytes);
  if (bytes) std::memcpy(static_cast<char*>(dst->data) + offset, src, bytes);
  return UT_OK;
}

ut_status sim_copy_out(void* dst, const ut_buffer* src, size_t offset, size_t bytes, ut_error* err) {
  if (!src || (!dst && bytes)) {
    set_error(err, "sim: copy_out: null buffer or destination");
    return UT_ERROR_INVALID;
  }
  if (!in_range(src, offset, bytes)) return range_error(err, "copy_out", offset, bytes, src->bytes);
  if (bytes) std::memcpy(dst, static_cast<const char*>(src->data) + offset, bytes);
  return UT_OK;
}

ut_status sim_copy(ut_buffer* dst, size_t dst_offset, const ut_buffer* src, size_t src_offset, size_t bytes,
                   ut_error* err) {
  if (!dst || !src) {
    set_error(err, "sim: copy: null buffer");
    return UT_ERROR_INVALID;
  }
  if (!in_range(dst, dst_offset, bytes)) return range_error(err, "copy (destination)", dst_offset, bytes, dst->bytes);
  if (!in_range(src, src_offset, bytes)) return range_error(err, "copy (source)", src_offset, bytes, src->bytes);
  if (bytes)
    std::memmove(static_cast<char*>(dst->data) + dst_offset, static_cast<const char*>(src->data) + src_offset, bytes);
  return UT_OK;
}

ut_status sim_compile(const char* source, const char* options, ut_binary** out, const void** data, size_t* size,
                      ut_error* err) {
  if (!source || !out || !data || !size) {
    set_error(err, "sim: compile: null argument");
    return UT_ERROR_INVALID;
  }
  return guarded(err, UT_ERROR_COMPILE, [&] {
    unitile::LoopProgram p = parse_and_verify(source, std::strlen(source), "<sim source>");
    // Prepare every func now, so that what the sim cannot run fails at compile time.
    for (const unitile::LoopFunc& f : p.funcs) SimKernel(p, f.name);
    auto bin = std::make_unique<ut_binary>();
    bin->text = unitile::to_string(p);
    *data = bin->text.data();
    *size = bin->text.size();
    *out = bin.release();
    return UT_OK;
  });
}

ut_status sim_load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err) {
  if (!data || !entry || !out) {
    set_error(err, "sim: load: null argument");
    return UT_ERROR_INVALID;
  }
  return guarded(err, UT_ERROR_INVALID, [&] {
    unitile::LoopProgram p = parse_and_verify(static_cast<const char*>(data), size, "<sim binary>");
    auto k = std::make_unique<ut_kernel>();
    k->kernel = std::make_unique<SimKernel>(std::move(p), entry);
    *out = k.release();
    return UT_OK;
  });
}

ut_status sim_launch(ut_kernel* kernel, const uint32_t grid[3], const uint32_t block[3], const ut_arg* args,
                     uint32_t nargs, ut_error* err) {
  if (!kernel || (!args && nargs)) {
    set_error(err, "sim: launch: null kernel or arguments");
    return UT_ERROR_INVALID;
  }
  return guarded(err, UT_ERROR_INVALID, [&] {
    const SimKernel& k = *kernel->kernel;
    const unitile::LoopProgram& p = k.program();
    std::string where = fmt::format("sim: kernel '{}' (func {})", p.kernel, k.func().name);
    const unitile::LaunchDims& d = k.launch_dims();
    if (grid && block &&
        (std::memcmp(grid, d.grid.data(), sizeof(uint32_t) * 3) != 0 ||
         std::memcmp(block, d.block.data(), sizeof(uint32_t) * 3) != 0))
      throw unitile::sim::ArgumentError(fmt::format(
          "{}: launched with grid ({}, {}, {}) block ({}, {}, {}) but its loops give grid ({}, {}, {}) block "
          "({}, {}, {})",
          where, grid[0], grid[1], grid[2], block[0], block[1], block[2], d.grid[0], d.grid[1], d.grid[2],
          d.block[0], d.block[1], d.block[2]));
    size_t nbuf = p.buffers.size();
    if (nargs != nbuf + p.params.size())
      throw unitile::sim::ArgumentError(fmt::format("{}: expected {} arguments ({} buffers, {} params), got {}",
                                                    where, nbuf + p.params.size(), nbuf, p.params.size(), nargs));
    std::vector<unitile::sim::BufferArg> buffers(nbuf);
    std::vector<unitile::sim::ParamArg> params(p.params.size());
    for (uint32_t i = 0; i < nargs; ++i) {
      const ut_arg& a = args[i];
      if (i < nbuf) {
        if (a.kind != UT_ARG_BUFFER || !a.value.buffer)
          throw unitile::sim::ArgumentError(
              fmt::format("{}: argument {} must be buffer '{}'", where, i, p.buffers[i].name));
        buffers[i] = {a.value.buffer->data, a.value.buffer->bytes};
        continue;
      }
      const unitile::ParamDecl& prm = p.params[i - nbuf];
      if (a.kind == UT_ARG_I64)
        params[i - nbuf] = {false, a.value.i64, 0};
      else if (a.kind == UT_ARG_F64)
        params[i - nbuf] = {true, 0, a.value.f64};
      else
        throw unitile::sim::ArgumentError(
            fmt::format("{}: argument {} must be the scalar param '{}'", where, i, prm.name));
    }
    k.run(buffers, params);
    return UT_OK;
  });
}

ut_status sim_synchronize(ut_error*) { return UT_OK; } // launches run to completion

ut_status sim_timer(ut_timer_op op, ut_event** event, const ut_event* start, double* elapsed_ms, ut_error* err) {
  if (!event) {
    set_error(err, "sim: timer: event is null");
    return UT_ERROR_INVALID;
  }
  if (op == UT_TIMER_RECORD) {
    auto* e = new (std::nothrow) ut_event{std::chrono::steady_clock::now()};
    if (!e) {
      set_error(err, "sim: out of host memory");
      return UT_ERROR_MEMORY;
    }
    *event = e;
    return UT_OK;
  }
  if (op == UT_TIMER_ELAPSED) {
    if (!start || !*event || !elapsed_ms) {
      set_error(err, "sim: timer: elapsed needs two recorded events and an output");
      return UT_ERROR_INVALID;
    }
    *elapsed_ms = std::chrono::duration<double, std::milli>((*event)->at - start->at).count();
    return UT_OK;
  }
  set_error(err, fmt::format("sim: timer: unknown operation {}", static_cast<int>(op)));
  return UT_ERROR_INVALID;
}

void sim_release(ut_release_kind kind, void* handle) {
  if (!handle) return;
  switch (kind) {
  case UT_RELEASE_BINARY: delete static_cast<ut_binary*>(handle); return;
  case UT_RELEASE_KERNEL: delete static_cast<ut_kernel*>(handle); return;
  case UT_RELEASE_EVENT: delete static_cast<ut_event*>(handle); return;
  }
}

const ut_device_api kSimApi = {
    UT_DEVICE_ABI_VERSION, 0,           sim_describe, sim_alloc,  sim_free,  sim_copy_in,
    sim_copy_out,          sim_copy,    sim_compile,  sim_load,   sim_launch, sim_synchronize,
    sim_timer,             sim_release,
};

} // namespace

extern "C" UT_PLUGIN_EXPORT const ut_device_api* unitile_device_plugin(void) { return &kSimApi; }
