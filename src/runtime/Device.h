// A device as the runtime uses it: a loaded plugin plus the HCD it runs under, with C++
// owners for the plugin's handles (buffers, kernels, events) and every status checked.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Loop.h"
#include "runtime/DevicePlugin.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// A device buffer; freed when the owner goes away. Move-only.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(std::shared_ptr<const DevicePlugin> plugin, ut_buffer* handle, size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  ut_buffer* handle() const { return handle_; }
  size_t bytes() const { return bytes_; }

private:
  std::shared_ptr<const DevicePlugin> plugin_;
  ut_buffer* handle_ = nullptr;
  size_t bytes_ = 0;
};

/// A plugin handle released with `release(kind, handle)`: kernels and events. Move-only.
template <ut_release_kind Kind, typename Handle> class ReleasedHandle {
public:
  ReleasedHandle() = default;
  ReleasedHandle(std::shared_ptr<const DevicePlugin> plugin, Handle* h) : plugin_(std::move(plugin)), h_(h) {}
  ReleasedHandle(ReleasedHandle&& o) noexcept : plugin_(std::move(o.plugin_)), h_(o.h_) { o.h_ = nullptr; }
  ReleasedHandle& operator=(ReleasedHandle&& o) noexcept {
    if (this != &o) {
      reset();
      plugin_ = std::move(o.plugin_);
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  ~ReleasedHandle() { reset(); }
  Handle* handle() const { return h_; }

private:
  void reset() {
    if (h_ && plugin_) plugin_->api().release(Kind, h_);
    h_ = nullptr;
  }
  std::shared_ptr<const DevicePlugin> plugin_;
  Handle* h_ = nullptr;
};

using DeviceKernel = ReleasedHandle<UT_RELEASE_KERNEL, ut_kernel>;
using DeviceEvent = ReleasedHandle<UT_RELEASE_EVENT, ut_event>;

class Device {
public:
  /// The device's HCD comes from describe (a built-in name or TOML text) unless
  /// `hcd_override` is given, which is how `sim` models other chips (`--hcd FILE`). The
  /// override keeps the plugin's own dialect: it changes the target, not the language.
  explicit Device(std::shared_ptr<const DevicePlugin> plugin,
                  std::optional<hcd::Hcd> hcd_override = std::nullopt);

  const std::string& name() const { return name_; }
  const hcd::Hcd& hcd() const { return hcd_; }
  const std::string& plugin_path() const { return plugin_->path(); }
  std::string toolchain_version() const;
  const std::shared_ptr<const DevicePlugin>& plugin() const { return plugin_; }

  DeviceBuffer alloc(size_t bytes) const;
  /// Whether buffers are host memory (the plugin has the host-memory extension).
  bool shares_host_memory() const { return plugin_->host_memory() != nullptr; }
  /// The buffer's bytes in this process (shares_host_memory() only).
  void* host_pointer(const DeviceBuffer& b) const;
  /// A buffer over host memory the caller owns, without a copy (shares_host_memory() only);
  /// the memory must outlive the buffer.
  DeviceBuffer wrap_host(void* data, size_t bytes) const;
  void copy_in(const DeviceBuffer& dst, const void* src, size_t bytes) const;
  void copy_out(void* dst, const DeviceBuffer& src, size_t bytes) const;
  /// Compile source in the HCD's dialect; returns the binary's bytes (the plugin's
  /// binary handle is released before returning).
  std::vector<uint8_t> compile(const std::string& source, const std::string& options) const;
  DeviceKernel load(const std::vector<uint8_t>& binary, const std::string& entry) const;
  void launch(const DeviceKernel& k, const LaunchDims& dims, const std::vector<ut_arg>& args,
              const std::string& what) const;
  void synchronize() const;
  DeviceEvent record_event() const;
  double elapsed_ms(const DeviceEvent& start, const DeviceEvent& end) const;

private:
  std::shared_ptr<const DevicePlugin> plugin_;
  std::string name_;
  hcd::Hcd hcd_;
};

/// The HCD a plugin's describe names: hcd::builtin(NAME) or hcd::load_string(TOML).
hcd::Hcd described_hcd(const DevicePlugin& plugin);

} // namespace unitile
