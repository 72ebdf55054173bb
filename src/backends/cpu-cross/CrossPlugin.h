// Internal declarations of the cpu-cross plugin: its handle types and the host end of
// the kernel server that runs target code under qemu-user (KernelServerProcess.cpp).
#pragma once

#include "CrossProtocol.h"
#include "unitile/device.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <vector>

// Buffers are memfds mapped in both processes; `slot` names them to the server.
struct ut_buffer {
  void* data;
  size_t bytes;
  size_t mapped; // bytes mapped (a whole number of pages)
  uint64_t slot;
};

struct ut_binary {
  std::vector<unsigned char> bytes; // the target shared object
};

struct ut_kernel {
  uint64_t slot; // the server's dlopen'ed copy
};

namespace unitile::cross {

/// Write `message` into `err` (when given) and return `status`.
ut_status fail(ut_error* err, ut_status status, const std::string& message);

/// What the plugin reads from its embedded HCD.
struct Toolchain {
  std::string compiler;            // first word of the compile options the HCD gives
  std::vector<std::string> runner; // the emulator and its arguments: "qemu-aarch64 -L ..."
};
/// The embedded HCD's [toolchain], parsed once; throws std::runtime_error if malformed.
const Toolchain& toolchain();

/// The host end of the kernel server: a qemu-user process running this device's server
/// executable, started once per process. Requests are serialised: one at a time.
class KernelServer {
public:
  static KernelServer& instance();

  /// Start the server unless it runs (checking the toolchain and emulator first); the
  /// outcome of the first start is kept, so a broken setup fails the same way each time.
  ut_status start(ut_error* err);

  /// Send one request (with `payload` after the header and `fd` attached when >= 0) and
  /// wait for its reply. A server that died makes this and every later call fail.
  ut_status call(const ut_x_request& request, const void* payload, size_t payload_bytes, int fd,
                 ut_error* err);

  uint64_t take_buffer_slot();
  void return_buffer_slot(uint64_t slot);
  uint64_t take_kernel_slot();
  void return_kernel_slot(uint64_t slot);

private:
  KernelServer() = default;
  ut_status launch_process(std::string* why);
  std::string death_reason(); // after the socket failed: exit status and qemu's output

  std::mutex mutex_;
  bool tried_ = false;
  ut_status start_status_ = UT_OK;
  std::string start_message_;
  int socket_ = -1;
  int log_fd_ = -1; // the emulator's stdout and stderr
  pid_t pid_ = -1;
  pid_t owner_ = -1; // the process that started the server: a forked child must not share it
  std::string dead_; // why the server is gone, once it is
  std::vector<uint64_t> free_buffers_, free_kernels_;
  uint64_t next_buffer_ = 0, next_kernel_ = 0;
};

} // namespace unitile::cross
