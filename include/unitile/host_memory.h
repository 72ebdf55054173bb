/* An optional extension of the device ABI for devices whose buffers are host memory.
 *
 * A plugin whose buffers live in the process's own memory (the cpu device) may export a
 * second symbol, `unitile_device_host_memory`, besides the 12 calls of device.h. With it
 * the runtime shares memory with the host instead of copying: a device tensor is viewed
 * as a host array (DLPack export without a copy), and a host array is wrapped as a
 * device buffer (DLPack import without a copy). A plugin without the symbol works as
 * before; every tensor then travels through copy_in / copy_out.
 */
#ifndef UNITILE_HOST_MEMORY_H
#define UNITILE_HOST_MEMORY_H

#include "unitile/device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UT_HOST_MEMORY_ABI_VERSION 1u

typedef struct ut_host_memory_api {
  uint32_t abi_version; /* UT_HOST_MEMORY_ABI_VERSION */
  uint32_t reserved;
  /* The first byte of `buffer` in this process's address space. */
  void* (*host_pointer)(const ut_buffer* buffer);
  /* A buffer over `bytes` bytes at `data`, owned by the caller: free() releases the
   * handle but never the memory, which must outlive every use of the buffer. `data`
   * must be aligned to the largest element size (8 bytes). */
  ut_status (*wrap)(void* data, size_t bytes, ut_buffer** out, ut_error* err);
} ut_host_memory_api;

#define UT_HOST_MEMORY_SYMBOL "unitile_device_host_memory"
typedef const ut_host_memory_api* (*ut_host_memory_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UNITILE_HOST_MEMORY_H */
