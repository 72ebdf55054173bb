// Device plugins built at test time from C source with the host compiler: a small
// in-memory "fake" device that counts its compile calls, and broken plugins that the
// registry must refuse. Building them here keeps the tests independent of the real
// backends and exercises dlopen, dlsym and the ABI check for real.
#pragma once

#include <filesystem>
#include <string>

namespace unitile::testing {

/// Compile `c_source` into DIR/libunitile-device-NAME.so; returns the path. Fails the
/// calling test (ADD_FAILURE) and returns an empty path if the compiler fails.
std::filesystem::path build_c_plugin(const std::filesystem::path& dir, const std::string& name,
                                     const std::string& c_source);

/// A working plugin named NAME: host-memory buffers, compile = copy the source (and
/// count), load checks the entry occurs in the source, launch counts and does nothing (or fails with
/// UT_ERROR_INTERNAL when $FAKE_LAUNCH_INTERNAL is set).
/// It also exports `int fake_compile_count(void)` and `int fake_launch_count(void)`.
std::string fake_device_source(const std::string& name, unsigned abi_version = 1,
                               const std::string& hcd_builtin = "sim");

/// A temporary directory unique to this process and test, removed by the destructor.
class TempDir {
public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace unitile::testing
