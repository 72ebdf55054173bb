// The checked C++ face of the 12 device calls.
#include "runtime/Device.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

namespace unitile {

DeviceBuffer::DeviceBuffer(std::shared_ptr<const DevicePlugin> plugin, ut_buffer* handle, size_t bytes)
    : plugin_(std::move(plugin)), handle_(handle), bytes_(bytes) {}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : plugin_(std::move(o.plugin_)), handle_(o.handle_), bytes_(o.bytes_) {
  o.handle_ = nullptr;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (handle_ && plugin_) plugin_->api().free(handle_);
    plugin_ = std::move(o.plugin_);
    handle_ = o.handle_;
    bytes_ = o.bytes_;
    o.handle_ = nullptr;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (handle_ && plugin_) plugin_->api().free(handle_);
}

hcd::Hcd described_hcd(const DevicePlugin& plugin) {
  const ut_device_info& info = plugin.info();
  if (info.hcd_builtin) return hcd::builtin(info.hcd_builtin);
  return hcd::load_string(info.hcd_toml, plugin.path() + " (describe)");
}

Device::Device(std::shared_ptr<const DevicePlugin> plugin, std::optional<hcd::Hcd> hcd_override)
    : plugin_(std::move(plugin)) {
  UT_INTERNAL_ASSERT(plugin_ != nullptr, "a device needs a plugin");
  name_ = plugin_->name();
  hcd_ = described_hcd(*plugin_);
  if (hcd_override) {
    // The override says what chip to schedule for; the plugin still reads only its own
    // language (sim modelling an H200 is fed Loop IR, not CUDA).
    std::string dialect = hcd_.dialect;
    hcd_ = std::move(*hcd_override);
    hcd_.dialect = dialect;
  }
}

std::string Device::toolchain_version() const {
  const char* v = plugin_->info().toolchain_version;
  return v ? v : "";
}

DeviceBuffer Device::alloc(size_t bytes) const {
  ut_error err{};
  ut_buffer* b = nullptr;
  // Zero-sized tensors still get a distinct buffer, so every argument is a valid handle.
  check_status(plugin_->api().alloc(bytes == 0 ? 1 : bytes, &b, &err), err, name_,
               fmt::format("alloc of {} bytes", bytes));
  UT_INTERNAL_ASSERT(b != nullptr, "plugin alloc returned UT_OK and no buffer");
  return DeviceBuffer(plugin_, b, bytes);
}

void* Device::host_pointer(const DeviceBuffer& b) const {
  UT_INTERNAL_ASSERT(shares_host_memory(), "host_pointer on a device whose buffers are not host memory");
  return plugin_->host_memory()->host_pointer(b.handle());
}

DeviceBuffer Device::wrap_host(void* data, size_t bytes) const {
  UT_INTERNAL_ASSERT(shares_host_memory(), "wrap_host on a device whose buffers are not host memory");
  ut_error err{};
  ut_buffer* b = nullptr;
  check_status(plugin_->host_memory()->wrap(data, bytes, &b, &err), err, name_,
               fmt::format("wrapping {} bytes of host memory", bytes));
  UT_INTERNAL_ASSERT(b != nullptr, "plugin wrap returned UT_OK and no buffer");
  return DeviceBuffer(plugin_, b, bytes);
}

void Device::copy_in(const DeviceBuffer& dst, const void* src, size_t bytes) const {
  UT_INTERNAL_ASSERT(bytes <= dst.bytes(), "copy_in past the end of a buffer");
  if (bytes == 0) return;
  ut_error err{};
  check_status(plugin_->api().copy_in(dst.handle(), 0, src, bytes, &err), err, name_, "copy_in");
}

void Device::copy_out(void* dst, const DeviceBuffer& src, size_t bytes) const {
  UT_INTERNAL_ASSERT(bytes <= src.bytes(), "copy_out past the end of a buffer");
  if (bytes == 0) return;
  ut_error err{};
  check_status(plugin_->api().copy_out(dst, src.handle(), 0, bytes, &err), err, name_, "copy_out");
}

std::vector<uint8_t> Device::compile(const std::string& source, const std::string& options) const {
  ut_error err{};
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  check_status(plugin_->api().compile(source.c_str(), options.c_str(), &bin, &data, &size, &err), err,
               name_, "compile");
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::vector<uint8_t> out(bytes, bytes + (bytes ? size : 0));
  if (bin) plugin_->api().release(UT_RELEASE_BINARY, bin);
  UT_INTERNAL_ASSERT(data != nullptr || size == 0, "plugin compile returned a size and no data");
  return out;
}

DeviceKernel Device::load(const std::vector<uint8_t>& binary, const std::string& entry) const {
  ut_error err{};
  ut_kernel* k = nullptr;
  check_status(plugin_->api().load(binary.data(), binary.size(), entry.c_str(), &k, &err), err, name_,
               fmt::format("load of entry '{}'", entry));
  UT_INTERNAL_ASSERT(k != nullptr, "plugin load returned UT_OK and no kernel");
  return DeviceKernel(plugin_, k);
}

void Device::launch(const DeviceKernel& k, const LaunchDims& dims, const std::vector<ut_arg>& args,
                    const std::string& what) const {
  ut_error err{};
  check_status(plugin_->api().launch(k.handle(), dims.grid.data(), dims.block.data(), args.data(),
                                     static_cast<uint32_t>(args.size()), &err),
               err, name_, fmt::format("launch of {}", what));
}

void Device::synchronize() const {
  ut_error err{};
  check_status(plugin_->api().synchronize(&err), err, name_, "synchronize");
}

DeviceEvent Device::record_event() const {
  ut_error err{};
  ut_event* e = nullptr;
  check_status(plugin_->api().timer(UT_TIMER_RECORD, &e, nullptr, nullptr, &err), err, name_,
               "timer record");
  UT_INTERNAL_ASSERT(e != nullptr, "plugin timer record returned UT_OK and no event");
  return DeviceEvent(plugin_, e);
}

double Device::elapsed_ms(const DeviceEvent& start, const DeviceEvent& end) const {
  ut_error err{};
  ut_event* e = end.handle();
  double ms = 0;
  check_status(plugin_->api().timer(UT_TIMER_ELAPSED, &e, start.handle(), &ms, &err), err, name_,
               "timer elapsed");
  return ms;
}

} // namespace unitile
