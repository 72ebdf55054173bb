// Spawning a C compiler to build a shared object from generated source (see the header).
#include "SharedObjectCompiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace unitile::cpu {

namespace {

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

bool find_program(const std::string& program) {
  if (program.empty())
    return false;
  if (program.find('/') != std::string::npos)
    return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return true;
  }
  return false;
}

std::string compiler_version(const std::string& compiler) {
  std::string version = compiler + ": unknown";
  TempDir dir;
  if (dir.path.empty())
    return version;
  std::string log = dir.file("version.txt"), why;
  if (run_process({compiler, "--version"}, log, &why) != 0)
    return version;
  std::ifstream in(log);
  std::string first;
  if (std::getline(in, first) && !first.empty())
    version = first;
  return version;
}

ut_status compile_shared_object(const std::string& device, const char* source, const char* options,
                                std::vector<unsigned char>* shared_object, std::string* message) {
  std::vector<std::string> args = split_words(options);
  if (args.empty())
    args.push_back("cc");
  TempDir dir;
  if (dir.path.empty()) {
    *message =
        device + ": cannot create a temp dir under " + temp_root() + ": " + std::strerror(errno);
    return UT_ERROR_INTERNAL;
  }
  std::string src = dir.file("kernel.c"), so = dir.file("kernel.so"), log = dir.file("compile.log");
  if (!write_file(src, source, std::strlen(source))) {
    *message = device + ": cannot write " + src;
    return UT_ERROR_INTERNAL;
  }
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
  if (status < 0) {
    *message = device + ": cannot run compiler '" + args[0] + "': " + why;
    return UT_ERROR_UNAVAILABLE;
  }
  if (status != 0) {
    *message = device + ": compiler '" + args[0] + "' failed with exit status " +
               std::to_string(status) + ":\n" + log_text;
    return UT_ERROR_COMPILE;
  }
  if (!read_file(so, shared_object) || shared_object->empty()) {
    *message = device + ": compiler '" + args[0] + "' wrote no shared object:\n" + log_text;
    return UT_ERROR_COMPILE;
  }
  return UT_OK;
}

} // namespace unitile::cpu
