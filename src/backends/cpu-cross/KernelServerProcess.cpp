// The host end of the kernel server: finding the toolchain and emulator, starting the
// server under qemu-user with its socket on UT_X_SERVER_FD, and request/reply over it.
#include "CrossDeviceConfig.h"
#include "CrossPlugin.h"
#include "SharedObjectCompiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace unitile::cross {

namespace {

// The directory this plugin was loaded from: the server executable lies next to it.
std::string plugin_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&plugin_dir), &info) == 0 || !info.dli_fname)
    return {};
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

// Everything the emulator wrote so far (its error messages), trimmed.
std::string read_log(int fd) {
  std::string text;
  char chunk[4096];
  for (off_t at = 0;;) {
    ssize_t n = pread(fd, chunk, sizeof chunk, at);
    if (n <= 0 || text.size() > 16384)
      break;
    text.append(chunk, static_cast<size_t>(n));
    at += n;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

// Move `fd` to 10 or above, close-on-exec, so it never lands on a descriptor the child's
// file actions write to.
int high_fd(int fd) {
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return moved;
}

ssize_t send_message(int socket, const void* header, size_t header_bytes, const void* payload,
                     size_t payload_bytes, int fd) {
  iovec io[2] = {{const_cast<void*>(header), header_bytes},
                 {const_cast<void*>(payload), payload_bytes}};
  msghdr msg{};
  msg.msg_iov = io;
  msg.msg_iovlen = payload_bytes ? 2 : 1;
  union {
    cmsghdr align;
    char space[CMSG_SPACE(sizeof(int))];
  } control{};
  if (fd >= 0) {
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do
    n = sendmsg(socket, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

ssize_t receive_message(int socket, void* into, size_t capacity) {
  ssize_t n;
  do
    n = recv(socket, into, capacity, 0);
  while (n < 0 && errno == EINTR);
  return n;
}

} // namespace

const Toolchain& toolchain() {
  static const Toolchain parsed = [] {
    toml::table hcd = toml::parse(std::string_view(kHcdToml),
                                  std::string_view(UT_CROSS_DEVICE_NAME " (embedded HCD)"));
    Toolchain t;
    t.compiler = hcd["toolchain"]["compiler"].value_or(std::string());
    t.runner = cpu::split_words(hcd["toolchain"]["runner"].value_or(std::string()).c_str());
    if (t.compiler.empty() || t.runner.empty())
      throw std::runtime_error("the embedded HCD names no [toolchain] compiler and runner");
    return t;
  }();
  return parsed;
}

KernelServer& KernelServer::instance() {
  // Never destroyed: the plugin is never unloaded, and the server exits by itself when
  // the host process (and with it the socket) goes away.
  static KernelServer* server = new KernelServer;
  return *server;
}

ut_status KernelServer::launch_process(std::string* why) {
  const std::string server = plugin_dir() + "/" + UT_CROSS_SERVER_FILE;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    *why = std::string("cannot create a socket pair: ") + std::strerror(errno);
    return UT_ERROR_INTERNAL;
  }
  int host_end = high_fd(pair[0]), server_end = high_fd(pair[1]);
  log_fd_ = high_fd(memfd_create("unitile-kernel-server-log", MFD_CLOEXEC));
  if (host_end < 0 || server_end < 0 || log_fd_ < 0) {
    *why = std::string("cannot set up the server's descriptors: ") + std::strerror(errno);
    return UT_ERROR_INTERNAL;
  }
  std::vector<std::string> args = toolchain().runner;
  args.push_back(server);
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd_, 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd_, 2);
  posix_spawn_file_actions_adddup2(&actions, server_end, UT_X_SERVER_FD);
  int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(server_end);
  if (rc != 0) {
    close(host_end);
    *why = "cannot start '" + args[0] + "': " + std::strerror(rc);
    return UT_ERROR_UNAVAILABLE;
  }
  socket_ = host_end;
  owner_ = getpid();

  ut_x_hello hello{};
  ssize_t n = receive_message(socket_, &hello, sizeof hello);
  if (n != static_cast<ssize_t>(sizeof hello)) {
    *why = "the kernel server did not start under '" + args[0] + "': " + death_reason();
    return UT_ERROR_UNAVAILABLE;
  }
  if (hello.version != UT_X_PROTOCOL_VERSION || hello.pointer_bytes != sizeof(void*) ||
      hello.request_bytes != sizeof(ut_x_request) || hello.arg_bytes != sizeof(ut_x_arg)) {
    *why = "the kernel server " + server + " speaks another protocol (version " +
           std::to_string(hello.version) + ", " + std::to_string(hello.pointer_bytes) +
           "-byte pointers); rebuild Unitile";
    return UT_ERROR_UNAVAILABLE;
  }
  return UT_OK;
}

ut_status KernelServer::start(ut_error* err) {
  const Toolchain& t = toolchain(); // may throw, before anything is recorded
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tried_) {
    tried_ = true;
    const std::string device = UT_CROSS_DEVICE_NAME;
    const std::string packages = " (Debian packages: " UT_CROSS_PACKAGES ")";
    std::string why;
    if (!cpu::find_program(t.compiler)) {
      start_status_ = UT_ERROR_UNAVAILABLE;
      start_message_ =
          device + ": the cross compiler '" + t.compiler + "' is not installed" + packages;
    } else if (!cpu::find_program(t.runner[0])) {
      start_status_ = UT_ERROR_UNAVAILABLE;
      start_message_ = device + ": the emulator '" + t.runner[0] + "' is not installed" + packages;
    } else if (std::string(UT_CROSS_SERVER_FILE).empty()) {
      start_status_ = UT_ERROR_UNAVAILABLE;
      start_message_ = device +
                       ": its kernel server was not built: " UT_CROSS_SERVER_MISSING "; install" +
                       packages + " and rebuild Unitile";
    } else if ((start_status_ = launch_process(&why)) != UT_OK) {
      start_message_ = device + ": " + why;
    }
  }
  if (start_status_ != UT_OK)
    return fail(err, start_status_, start_message_);
  return UT_OK;
}

std::string KernelServer::death_reason() {
  std::string reason = "it exited";
  if (pid_ > 0) {
    int status = 0;
    pid_t got;
    do
      got = waitpid(pid_, &status, 0);
    while (got < 0 && errno == EINTR);
    if (got == pid_ && WIFEXITED(status))
      reason = "it exited with status " + std::to_string(WEXITSTATUS(status));
    else if (got == pid_ && WIFSIGNALED(status))
      reason = std::string("it was killed by signal ") + strsignal(WTERMSIG(status));
    pid_ = -1;
  }
  std::string log = log_fd_ >= 0 ? read_log(log_fd_) : std::string();
  if (!log.empty())
    reason += "; the emulator said:\n" + log;
  return reason;
}

ut_status KernelServer::call(const ut_x_request& request, const void* payload, size_t payload_bytes,
                             int fd, ut_error* err) {
  const std::string device = UT_CROSS_DEVICE_NAME;
  ut_status started = start(err);
  if (started != UT_OK)
    return started;
  std::lock_guard<std::mutex> lock(mutex_);
  if (owner_ != getpid())
    return fail(err, UT_ERROR_INVALID,
                device + ": the kernel server belongs to process " + std::to_string(owner_) +
                    "; a forked child cannot share it");
  if (!dead_.empty())
    return fail(err, UT_ERROR_LAUNCH, device + ": the kernel server died earlier: " + dead_);
  unsigned char reply[sizeof(ut_x_reply) + UT_X_MAX_MESSAGE];
  ssize_t sent = send_message(socket_, &request, sizeof request, payload, payload_bytes, fd);
  ssize_t got = sent < 0 ? -1 : receive_message(socket_, reply, sizeof reply);
  if (got < static_cast<ssize_t>(sizeof(ut_x_reply))) {
    dead_ = death_reason();
    close(socket_);
    socket_ = -1;
    return fail(err, UT_ERROR_LAUNCH,
                device + ": the kernel server under " + toolchain().runner[0] +
                    " stopped (a kernel crashed, or the emulator failed): " + dead_);
  }
  ut_x_reply header;
  std::memcpy(&header, reply, sizeof header);
  if (header.status == UT_OK)
    return UT_OK;
  size_t length = std::min<size_t>(header.message_bytes, static_cast<size_t>(got) - sizeof header);
  return fail(err, static_cast<ut_status>(header.status),
              device + ": " + std::string(reinterpret_cast<char*>(reply) + sizeof header, length));
}

uint64_t KernelServer::take_buffer_slot() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_buffers_.empty())
    return next_buffer_++;
  uint64_t slot = free_buffers_.back();
  free_buffers_.pop_back();
  return slot;
}

void KernelServer::return_buffer_slot(uint64_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_buffers_.push_back(slot);
}

uint64_t KernelServer::take_kernel_slot() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_kernels_.empty())
    return next_kernel_++;
  uint64_t slot = free_kernels_.back();
  free_kernels_.pop_back();
  return slot;
}

void KernelServer::return_kernel_slot(uint64_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_kernels_.push_back(slot);
}

} // namespace unitile::cross
