/* The wire format between the cpu-cross plugin (in the host process) and its kernel
 * server (a target-CPU program running under qemu-user), shared by both sides.
 *
 * The two ends talk over one SOCK_SEQPACKET socket pair, one message per request and one
 * per reply, so message boundaries need no framing. File descriptors (a buffer's or a
 * kernel's memfd) travel with their request as SCM_RIGHTS, which qemu-user translates.
 * Buffers are memfds that both ends map MAP_SHARED, so their bytes are never sent:
 * copies are plain memcpy on the host, and the server's writes are visible to the host
 * as soon as it replies to a launch.
 *
 * Both targets (aarch64, riscv64) are LP64 little-endian like the x86-64 host, so the
 * structs below have the same layout on both ends; the server checks that in its hello.
 * Buffers and kernels are named by small slot numbers that the host assigns and reuses.
 */
#ifndef UNITILE_BACKENDS_CPU_CROSS_PROTOCOL_H
#define UNITILE_BACKENDS_CPU_CROSS_PROTOCOL_H

#include <stdint.h>

#define UT_X_PROTOCOL_VERSION 1u
/* The server's end of the socket, set up by the host before exec. */
#define UT_X_SERVER_FD 3
/* Largest request: a launch header plus UT_X_MAX_ARGS arguments. */
#define UT_X_MAX_ARGS 1024u
#define UT_X_MAX_ENTRY 1024u
#define UT_X_MAX_MESSAGE 4000u

typedef enum ut_x_op {
  UT_X_MAP = 1,    /* slot, bytes; fd attached: mmap it MAP_SHARED as buffer `slot` */
  UT_X_UNMAP = 2,  /* slot: unmap buffer `slot` */
  UT_X_LOAD = 3,   /* slot, bytes = entry name length, name follows; fd attached: the .so */
  UT_X_UNLOAD = 4, /* slot: dlclose kernel `slot` */
  UT_X_LAUNCH = 5  /* slot = kernel, grid, nargs; ut_x_arg[nargs] follow */
} ut_x_op;

typedef struct ut_x_request {
  uint32_t op;
  uint32_t nargs;
  uint64_t slot;
  uint64_t bytes;
  uint32_t grid[3];
  uint32_t reserved;
} ut_x_request;

typedef enum ut_x_arg_kind {
  UT_X_ARG_BUFFER = 0,
  UT_X_ARG_I64 = 1,
  UT_X_ARG_F64 = 2
} ut_x_arg_kind;

/* One launch argument: a buffer slot, or a scalar's 64 bits (f64 as its bit pattern). */
typedef struct ut_x_arg {
  uint32_t kind;
  uint32_t reserved;
  uint64_t bits;
} ut_x_arg;

/* Every request gets one reply: a status (0 = ok, else a ut_status value) and a message
 * of `message_bytes` characters following the header (no NUL). */
typedef struct ut_x_reply {
  uint32_t status;
  uint32_t message_bytes;
} ut_x_reply;

/* The first message the server sends, before any request. */
typedef struct ut_x_hello {
  uint32_t version; /* UT_X_PROTOCOL_VERSION */
  uint32_t pointer_bytes;
  uint32_t request_bytes; /* sizeof(ut_x_request) as the server sees it */
  uint32_t arg_bytes;     /* sizeof(ut_x_arg) */
  uint64_t page_bytes;
} ut_x_hello;

#endif /* UNITILE_BACKENDS_CPU_CROSS_PROTOCOL_H */
