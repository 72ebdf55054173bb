// The cpu plugin's toolchain: C source -> shared object with the host compiler (see
// SharedObjectCompiler.h), and shared-object bytes -> loaded entry point (through a
// memfd, so nothing is left on disk).
#include "CpuPlugin.h"
#include "SharedObjectCompiler.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

namespace unitile::cpu {

namespace {

bool write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

} // namespace

const char* toolchain_version() {
  static std::string version;
  static std::once_flag once;
  std::call_once(once, [] { version = compiler_version("cc"); });
  return version.c_str();
}

ut_status compile(const char* source, const char* options, ut_binary** out, ut_error* err) {
  auto* b = new ut_binary;
  std::string message;
  ut_status s = compile_shared_object("cpu", source, options, &b->bytes, &message);
  if (s != UT_OK) {
    delete b;
    return fail(err, s, message);
  }
  *out = b;
  return UT_OK;
}

ut_status load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err) {
  auto* k = new ut_kernel;
  std::string path;
  k->fd = memfd_create("unitile-kernel", MFD_CLOEXEC);
  if (k->fd >= 0) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t done = 0; done < size;) {
      ssize_t n = write(k->fd, p + done, size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        unload(k);
        return fail(err, UT_ERROR_INTERNAL,
                    std::string("cpu: cannot write the binary to a memfd: ") +
                        std::strerror(errno));
      }
      done += static_cast<size_t>(n);
    }
    path = "/proc/self/fd/" + std::to_string(k->fd);
  } else { // no memfd (old kernel, seccomp): a temp file, removed at release
    std::string templ = temp_root() + "/unitile-kernel-XXXXXX.so";
    int fd = mkstemps(templ.data(), 3);
    if (fd < 0) {
      unload(k);
      return fail(err, UT_ERROR_INTERNAL,
                  "cpu: cannot create a temp file: " + std::string(std::strerror(errno)));
    }
    close(fd);
    k->temp_path = path = templ;
    if (!write_file(path, data, size)) {
      unload(k);
      return fail(err, UT_ERROR_INTERNAL, "cpu: cannot write " + path);
    }
  }
  k->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!k->library) {
    std::string why = dlerror();
    unload(k);
    return fail(err, UT_ERROR_INVALID, "cpu: cannot load the binary: " + why);
  }
  k->entry = reinterpret_cast<ut_c_entry_fn>(dlsym(k->library, entry));
  if (!k->entry) {
    unload(k);
    return fail(err, UT_ERROR_INVALID,
                std::string("cpu: the binary has no entry point '") + entry + "'");
  }
  *out = k;
  return UT_OK;
}

void unload(ut_kernel* k) {
  if (!k)
    return;
  if (k->library)
    dlclose(k->library);
  if (k->fd >= 0)
    close(k->fd);
  if (!k->temp_path.empty())
    unlink(k->temp_path.c_str());
  delete k;
}

} // namespace unitile::cpu
