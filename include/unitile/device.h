/* The Unitile device ABI: the 12 calls a device plugin implements.
 *
 * A plugin is a shared object that exports one symbol, `unitile_device_plugin`, a
 * function returning a pointer to a static `ut_device_api`. The runtime checks
 * `abi_version` against UT_DEVICE_ABI_VERSION before calling anything else, so a plugin
 * built against another version is refused with a clear error, never called.
 *
 * Conventions:
 *  - Every call that can fail returns UT_OK or an error status and, on error, writes a
 *    NUL-terminated message into `err` (may be NULL: then the message is dropped).
 *  - Work may be queued: launch and the copies are ordered on one queue per device;
 *    synchronize waits for it. copy_out is complete when it returns.
 *  - Kernel source arrives in the dialect the device's HCD names; compile turns it into
 *    an opaque binary that the runtime may cache on disk and later hand to load.
 *  - Nothing here throws or takes C++ types: it is plain C, stable across compilers.
 */
#ifndef UNITILE_DEVICE_H
#define UNITILE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UT_DEVICE_ABI_VERSION 1u
#define UT_ERROR_CAPACITY 16384

typedef enum ut_status {
  UT_OK = 0,
  UT_ERROR_INVALID = 1,   /* bad argument from the caller */
  UT_ERROR_COMPILE = 2,   /* the vendor compiler rejected the source; err holds its log */
  UT_ERROR_MEMORY = 3,    /* out of device memory */
  UT_ERROR_LAUNCH = 4,    /* the kernel failed at run time (sim: an out-of-bounds access) */
  UT_ERROR_UNAVAILABLE = 5, /* the device or its driver is not present on this machine */
  UT_ERROR_INTERNAL = 6
} ut_status;

typedef struct ut_error {
  char message[UT_ERROR_CAPACITY];
} ut_error;

/* Opaque handles owned by the plugin. */
typedef struct ut_buffer ut_buffer;
typedef struct ut_binary ut_binary;
typedef struct ut_kernel ut_kernel;
typedef struct ut_event ut_event;

/* What describe reports. Strings are owned by the plugin and live as long as it is
 * loaded. Exactly one of hcd_toml / hcd_builtin is set. */
typedef struct ut_device_info {
  const char* name;              /* device name used on the command line: "cpu", "sim" */
  const char* hcd_toml;          /* the device's HCD as TOML text, or NULL */
  const char* hcd_builtin;       /* or the name of a built-in HCD ("host-cpu"), or NULL */
  const char* toolchain_version; /* part of the kernel cache key: e.g. `cc --version` line 1 */
} ut_device_info;

typedef enum ut_arg_kind { UT_ARG_BUFFER = 0, UT_ARG_I64 = 1, UT_ARG_F64 = 2 } ut_arg_kind;

/* One kernel argument. Scalars travel widened; `dtype` says what the kernel declares
 * (the IR's DType numbering: 0 f16, 1 bf16, 2 f32, 3 f64, 4 i8, 5 i16, 6 i32, 7 i64,
 * 8 u8, 9 bool), so the plugin can narrow them. */
typedef struct ut_arg {
  uint32_t kind;
  uint32_t dtype;
  union {
    ut_buffer* buffer;
    int64_t i64;
    double f64;
  } value;
} ut_arg;

typedef enum ut_timer_op {
  UT_TIMER_RECORD = 0,  /* *event = a new event recorded at this point of the queue */
  UT_TIMER_ELAPSED = 1  /* *elapsed_ms = time from `start` to `*event` (both recorded) */
} ut_timer_op;

typedef enum ut_release_kind { UT_RELEASE_BINARY = 0, UT_RELEASE_KERNEL = 1, UT_RELEASE_EVENT = 2 } ut_release_kind;

typedef struct ut_device_api {
  uint32_t abi_version; /* UT_DEVICE_ABI_VERSION the plugin was built against */
  uint32_t reserved;

  /*  1 */ ut_status (*describe)(ut_device_info* info, ut_error* err);
  /*  2 */ ut_status (*alloc)(size_t bytes, ut_buffer** out, ut_error* err);
  /*  3 */ void (*free)(ut_buffer* buffer);
  /*  4 */ ut_status (*copy_in)(ut_buffer* dst, size_t offset, const void* src, size_t bytes, ut_error* err);
  /*  5 */ ut_status (*copy_out)(void* dst, const ut_buffer* src, size_t offset, size_t bytes, ut_error* err);
  /*  6 */ ut_status (*copy)(ut_buffer* dst, size_t dst_offset, const ut_buffer* src, size_t src_offset,
                             size_t bytes, ut_error* err);
  /* Source in the device's dialect -> binary. `options` is the HCD's toolchain flags plus
   * anything the runtime adds, may be empty. *data and *size stay valid until release. */
  /*  7 */ ut_status (*compile)(const char* source, const char* options, ut_binary** out,
                              const void** data, size_t* size, ut_error* err);
  /* A binary's bytes (fresh from compile or read back from the cache) -> kernel handle. */
  /*  8 */ ut_status (*load)(const void* data, size_t size, const char* entry, ut_kernel** out,
                           ut_error* err);
  /*  9 */ ut_status (*launch)(ut_kernel* kernel, const uint32_t grid[3], const uint32_t block[3],
                             const ut_arg* args, uint32_t nargs, ut_error* err);
  /* 10 */ ut_status (*synchronize)(ut_error* err);
  /* 11 */ ut_status (*timer)(ut_timer_op op, ut_event** event, const ut_event* start,
                            double* elapsed_ms, ut_error* err);
  /* 12 */ void (*release)(ut_release_kind kind, void* handle);
} ut_device_api;

/* The one exported symbol. */
#define UT_DEVICE_PLUGIN_SYMBOL "unitile_device_plugin"
typedef const ut_device_api* (*ut_device_plugin_fn)(void);

#if defined(__GNUC__)
#define UT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define UT_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UNITILE_DEVICE_H */
