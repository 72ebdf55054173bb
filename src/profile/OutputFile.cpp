// Staged writing of report files (see OutputFile.h).
#include "profile/OutputFile.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace unitile::profile {

namespace fs = std::filesystem;

void check_writable(const std::string& path, const std::string& what) {
  if (path.empty())
    throw UserError(fmt::format("error: the {} path is empty", what));
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec))
    throw UserError(fmt::format("error: {} {}: is a folder, not a file", what, path));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw UserError(
        fmt::format("error: {} {}: folder '{}' does not exist", what, path, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UserError(fmt::format("error: {} {}: cannot write into folder '{}': {}", what, path,
                                dir.string(), std::strerror(errno)));
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    throw UserError(fmt::format("error: {} {}: the file is not writable: {}", what, path,
                                std::strerror(errno)));
}

StagedOutputs::~StagedOutputs() {
  for (const Staged& s : staged_) {
    std::error_code ec;
    fs::remove(s.temp, ec);
  }
}

void StagedOutputs::add(const std::string& path, const std::string& content,
                        const std::string& what) {
  check_writable(path, what);
  const std::string temp = fmt::format("{}.tmp-{}", path, ::getpid());
  staged_.push_back({path, temp, what});
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  out << content;
  out.flush();
  if (!out)
    throw UserError(
        fmt::format("error: {} {}: write failed: {}", what, path, std::strerror(errno)));
}

void StagedOutputs::commit() {
  for (const Staged& s : staged_) {
    std::error_code ec;
    fs::rename(s.temp, s.path, ec);
    if (ec)
      throw UserError(fmt::format("error: {} {}: {}", s.what, s.path, ec.message()));
  }
  staged_.clear();
}

void write_output_file(const std::string& path, const std::string& content,
                       const std::string& what) {
  StagedOutputs out;
  out.add(path, content, what);
  out.commit();
}

} // namespace unitile::profile
