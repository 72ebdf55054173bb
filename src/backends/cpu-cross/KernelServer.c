/* The kernel server: a small program built for the target CPU (aarch64, riscv64) that the
 * cpu-cross plugin runs under qemu-user, once per host process. It exists because an
 * x86-64 process cannot dlopen target code: the server dlopens the kernels instead and
 * runs launches on buffers it shares with the host (see CrossProtocol.h).
 *
 * Requests come one at a time on UT_X_SERVER_FD; each gets one reply. The server exits
 * when the host closes its end. Grid blocks run one after another, in the cpu plugin's
 * order (x fastest): under qemu, serial execution is the honest baseline and keeps the
 * server free of threads.
 */
#define _GNU_SOURCE
#include "CrossProtocol.h"
#include "codegen/CDialectAbi.h"
#include "unitile/device.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

struct buffer {
  void* data;
  uint64_t bytes;
};

struct kernel {
  void* library;
  ut_c_entry_fn entry;
  int fd; /* kept open while loaded: the loader matches libraries by path */
  char name[UT_X_MAX_ENTRY];
};

static struct buffer* buffers;
static uint64_t buffer_slots;
static struct kernel* kernels;
static uint64_t kernel_slots;

/* The largest request: a header plus UT_X_MAX_ARGS arguments or an entry name. */
static unsigned char
    request_space[sizeof(ut_x_request) + UT_X_MAX_ARGS * sizeof(ut_x_arg) + UT_X_MAX_ENTRY];
static ut_c_arg call_args[UT_X_MAX_ARGS];

/* What runs now, for the crash report. */
static const char* running_entry;
static volatile uint32_t running_block[3];

/* A kernel that faults takes the server down (its memory may be corrupt), but first says
 * which kernel and block on stderr, which the host shows with its error. */
static void report_crash(int sig) {
  char text[UT_X_MAX_ENTRY + 160];
  int n = snprintf(text, sizeof text,
                   "kernel server: '%s' crashed with signal %d (%s) in block (%u, %u, %u)\n",
                   running_entry ? running_entry : "(none)", sig, strsignal(sig), running_block[0],
                   running_block[1], running_block[2]);
  if (n > 0 && write(2, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1) < 0)
    _exit(128 + sig);
  _exit(128 + sig);
}

static int send_all(const void* data, size_t bytes) {
  for (;;) {
    ssize_t n = send(UT_X_SERVER_FD, data, bytes, MSG_NOSIGNAL);
    if (n >= 0)
      return n == (ssize_t)bytes ? 0 : -1;
    if (errno != EINTR)
      return -1;
  }
}

static int reply(uint32_t status, const char* format, ...) {
  unsigned char out[sizeof(ut_x_reply) + UT_X_MAX_MESSAGE + 1];
  ut_x_reply header = {status, 0};
  if (format) {
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf((char*)out + sizeof header, UT_X_MAX_MESSAGE + 1, format, ap);
    va_end(ap);
    if (n > 0)
      header.message_bytes = n > (int)UT_X_MAX_MESSAGE ? UT_X_MAX_MESSAGE : (uint32_t)n;
  }
  memcpy(out, &header, sizeof header);
  return send_all(out, sizeof header + header.message_bytes);
}

/* Grow `*table` (of `*slots` entries of `size` bytes) to hold index `slot`; new entries
 * are zero. Returns 0, or -1 when out of memory. */
static int reserve(void** table, uint64_t* slots, size_t size, uint64_t slot) {
  if (slot < *slots)
    return 0;
  uint64_t wanted = slot + 1 < 2 * *slots ? 2 * *slots : slot + 1;
  void* grown = realloc(*table, wanted * size);
  if (!grown)
    return -1;
  memset((char*)grown + *slots * size, 0, (wanted - *slots) * size);
  *table = grown;
  *slots = wanted;
  return 0;
}

static int map_buffer(const ut_x_request* r, int fd) {
  if (fd < 0)
    return reply(UT_ERROR_INVALID, "map: no file descriptor came with the request");
  if (reserve((void**)&buffers, &buffer_slots, sizeof *buffers, r->slot) != 0 ||
      buffers[r->slot].data) {
    close(fd);
    return reply(UT_ERROR_INVALID, "map: slot %llu is taken or out of memory",
                 (unsigned long long)r->slot);
  }
  void* data = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int saved = errno;
  close(fd);
  if (data == MAP_FAILED)
    return reply(UT_ERROR_MEMORY, "cannot map a buffer of %llu bytes: %s",
                 (unsigned long long)r->bytes, strerror(saved));
  buffers[r->slot].data = data;
  buffers[r->slot].bytes = r->bytes;
  return reply(UT_OK, NULL);
}

static int unmap_buffer(const ut_x_request* r) {
  if (r->slot >= buffer_slots || !buffers[r->slot].data)
    return reply(UT_ERROR_INVALID, "unmap: no buffer in slot %llu", (unsigned long long)r->slot);
  munmap(buffers[r->slot].data, buffers[r->slot].bytes);
  buffers[r->slot].data = NULL;
  return reply(UT_OK, NULL);
}

static int load_kernel(const ut_x_request* r, size_t size, int fd) {
  if (fd < 0)
    return reply(UT_ERROR_INVALID, "load: no file descriptor came with the request");
  if (r->bytes == 0 || r->bytes >= UT_X_MAX_ENTRY || sizeof *r + r->bytes != size) {
    close(fd);
    return reply(UT_ERROR_INVALID, "load: malformed entry name");
  }
  if (reserve((void**)&kernels, &kernel_slots, sizeof *kernels, r->slot) != 0 ||
      kernels[r->slot].library) {
    close(fd);
    return reply(UT_ERROR_INVALID, "load: slot %llu is taken or out of memory",
                 (unsigned long long)r->slot);
  }
  char entry[UT_X_MAX_ENTRY];
  memcpy(entry, request_space + sizeof *r, r->bytes);
  entry[r->bytes] = '\0';
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    close(fd);
    return reply(UT_ERROR_INVALID, "cannot load the binary: %s", why ? why : "unknown reason");
  }
  void* entry_fn = dlsym(library, entry);
  if (!entry_fn) {
    dlclose(library);
    close(fd);
    return reply(UT_ERROR_INVALID, "the binary has no entry point '%s'", entry);
  }
  kernels[r->slot].library = library;
  memcpy(&kernels[r->slot].entry, &entry_fn, sizeof entry_fn);
  kernels[r->slot].fd = fd;
  memcpy(kernels[r->slot].name, entry, r->bytes + 1);
  return reply(UT_OK, NULL);
}

static int unload_kernel(const ut_x_request* r) {
  if (r->slot >= kernel_slots || !kernels[r->slot].library)
    return reply(UT_ERROR_INVALID, "unload: no kernel in slot %llu", (unsigned long long)r->slot);
  dlclose(kernels[r->slot].library);
  close(kernels[r->slot].fd);
  memset(&kernels[r->slot], 0, sizeof kernels[r->slot]);
  return reply(UT_OK, NULL);
}

static int launch(const ut_x_request* r, size_t size) {
  if (r->slot >= kernel_slots || !kernels[r->slot].library)
    return reply(UT_ERROR_INVALID, "launch: no kernel in slot %llu", (unsigned long long)r->slot);
  if (r->nargs > UT_X_MAX_ARGS || sizeof *r + r->nargs * sizeof(ut_x_arg) != size)
    return reply(UT_ERROR_INVALID, "launch: malformed argument list");
  const unsigned char* arg_bytes = request_space + sizeof *r;
  for (uint32_t a = 0; a < r->nargs; ++a) {
    ut_x_arg arg;
    memcpy(&arg, arg_bytes + a * sizeof arg, sizeof arg);
    switch (arg.kind) {
    case UT_X_ARG_BUFFER:
      if (arg.bits >= buffer_slots || !buffers[arg.bits].data)
        return reply(UT_ERROR_INVALID, "launch: argument %u names no buffer (slot %llu)", a,
                     (unsigned long long)arg.bits);
      call_args[a].p = buffers[arg.bits].data;
      break;
    case UT_X_ARG_I64:
      memcpy(&call_args[a].i, &arg.bits, sizeof arg.bits);
      break;
    case UT_X_ARG_F64:
      memcpy(&call_args[a].f, &arg.bits, sizeof arg.bits);
      break;
    default:
      return reply(UT_ERROR_INVALID, "launch: argument %u has unknown kind %u", a, arg.kind);
    }
  }
  const ut_c_entry_fn fn = kernels[r->slot].entry;
  running_entry = kernels[r->slot].name;
  for (uint32_t bz = 0; bz < r->grid[2]; ++bz)
    for (uint32_t by = 0; by < r->grid[1]; ++by)
      for (uint32_t bx = 0; bx < r->grid[0]; ++bx) {
        running_block[0] = bx;
        running_block[1] = by;
        running_block[2] = bz;
        fn(call_args, bx, by, bz);
      }
  running_entry = NULL;
  return reply(UT_OK, NULL);
}

/* Receive one request into request_space; returns its size, 0 at end of input, -1 on a
 * socket error. `*fd` is the descriptor that came with it, or -1. */
static ssize_t receive(int* fd) {
  *fd = -1;
  struct iovec io = {request_space, sizeof request_space};
  union {
    struct cmsghdr align;
    char space[CMSG_SPACE(sizeof(int))];
  } control;
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control.space;
  msg.msg_controllen = sizeof control.space;
  ssize_t n;
  do
    n = recvmsg(UT_X_SERVER_FD, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return n;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      memcpy(fd, CMSG_DATA(c), sizeof *fd);
  if (msg.msg_flags & MSG_TRUNC)
    return -2;
  return n;
}

int main(void) {
  /* No core files from crashing kernels; a report on stderr instead. */
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  for (size_t k = 0; k < sizeof fatal / sizeof fatal[0]; ++k)
    signal(fatal[k], report_crash);
  ut_x_hello hello = {UT_X_PROTOCOL_VERSION, (uint32_t)sizeof(void*),
                      (uint32_t)sizeof(ut_x_request), (uint32_t)sizeof(ut_x_arg),
                      (uint64_t)sysconf(_SC_PAGESIZE)};
  if (send_all(&hello, sizeof hello) != 0)
    return 1;
  for (;;) {
    int fd = -1;
    ssize_t size = receive(&fd);
    if (size == 0)
      return 0;
    if (size == -2) {
      if (fd >= 0)
        close(fd);
      if (reply(UT_ERROR_INVALID, "request larger than %zu bytes", sizeof request_space) != 0)
        return 1;
      continue;
    }
    if (size < 0 || (size_t)size < sizeof(ut_x_request)) {
      if (size < 0)
        return 1;
      if (reply(UT_ERROR_INVALID, "short request of %zd bytes", size) != 0)
        return 1;
      continue;
    }
    ut_x_request r;
    memcpy(&r, request_space, sizeof r);
    int failed;
    switch (r.op) {
    case UT_X_MAP:
      failed = map_buffer(&r, fd);
      break;
    case UT_X_UNMAP:
      failed = unmap_buffer(&r);
      break;
    case UT_X_LOAD:
      failed = load_kernel(&r, (size_t)size, fd);
      break;
    case UT_X_UNLOAD:
      failed = unload_kernel(&r);
      break;
    case UT_X_LAUNCH:
      failed = launch(&r, (size_t)size);
      break;
    default:
      if (fd >= 0)
        close(fd);
      failed = reply(UT_ERROR_INVALID, "unknown request %u", r.op);
    }
    if (failed)
      return 1;
    if (fd >= 0 && r.op != UT_X_MAP && r.op != UT_X_LOAD)
      close(fd);
  }
}
