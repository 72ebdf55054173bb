// The cpu plugin's toolchain: C source -> shared object with the host compiler (run with
// posix_spawn in a private temp dir), and shared-object bytes -> loaded entry point
// (through a memfd, so nothing is left on disk).
#include "CpuPlugin.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

extern char** environ;

namespace unitile::cpu {

namespace {

std::string temp_root() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

std::vector<std::string> split_words(const char* s) {
  std::vector<std::string> words;
  std::istringstream in(s ? s : "");
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

bool write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

bool read_file(const std::string& path, std::vector<unsigned char>* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// Run argv[0] (searched in PATH) with stdout and stderr going to `log_path`. Returns the
// exit status, or -1 with `why` set when the process could not be started or died.
int run_process(const std::vector<std::string>& args, const std::string& log_path,
                std::string* why) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *why = std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      *why = std::strerror(errno);
      return -1;
    }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  *why = "killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
}

// A private directory that removes itself and its files.
struct TempDir {
  std::string path;
  std::vector<std::string> files;
  TempDir() {
    std::string templ = temp_root() + "/unitile-cpu-XXXXXX";
    if (mkdtemp(templ.data()))
      path = templ;
  }
  std::string file(const char* name) {
    files.push_back(path + "/" + name);
    return files.back();
  }
  ~TempDir() {
    for (const auto& f : files)
      unlink(f.c_str());
    if (!path.empty())
      rmdir(path.c_str());
  }
};

} // namespace

const char* toolchain_version() {
  static std::string version;
  static std::once_flag once;
  std::call_once(once, [] {
    version = "cc: unknown";
    TempDir dir;
    if (dir.path.empty())
      return;
    std::string log = dir.file("version.txt"), why;
    if (run_process({"cc", "--version"}, log, &why) != 0)
      return;
    std::ifstream in(log);
    std::string first;
    if (std::getline(in, first) && !first.empty())
      version = first;
  });
  return version.c_str();
}

ut_status compile(const char* source, const char* options, ut_binary** out, ut_error* err) {
  std::vector<std::string> args = split_words(options);
  if (args.empty())
    args.push_back("cc");
  TempDir dir;
  if (dir.path.empty())
    return fail(err, UT_ERROR_INTERNAL,
                "cpu: cannot create a temp dir under " + temp_root() + ": " + std::strerror(errno));
  std::string src = dir.file("kernel.c"), so = dir.file("kernel.so"), log = dir.file("compile.log");
  if (!write_file(src, source, std::strlen(source)))
    return fail(err, UT_ERROR_INTERNAL, "cpu: cannot write " + src);
  for (const char* a : {"-std=gnu11", "-shared", "-fPIC", "-o"})
    args.push_back(a);
  args.push_back(so);
  args.push_back(src);
  args.push_back("-lm");
  std::string why;
  int status = run_process(args, log, &why);
  std::vector<unsigned char> log_bytes;
  read_file(log, &log_bytes);
  std::string log_text(log_bytes.begin(), log_bytes.end());
  if (status < 0)
    return fail(err, UT_ERROR_UNAVAILABLE, "cpu: cannot run compiler '" + args[0] + "': " + why);
  if (status != 0)
    return fail(err, UT_ERROR_COMPILE,
                "cpu: compiler '" + args[0] + "' failed with exit status " +
                    std::to_string(status) + ":\n" + log_text);
  auto* b = new ut_binary;
  if (!read_file(so, &b->bytes) || b->bytes.empty()) {
    delete b;
    return fail(err, UT_ERROR_COMPILE,
                "cpu: compiler '" + args[0] + "' wrote no shared object:\n" + log_text);
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
