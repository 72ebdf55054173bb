// File reading for the runtime's entry points.
#include "runtime/SourceFiles.h"

#include "ir/Parser.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace unitile {

SourceFile read_source_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(fmt::format("{}: error: is a directory, not a .ut file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: error: cannot open file: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return SourceFile{path, ss.str()};
}

Module load_module(const std::string& path) { return parse_module(read_source_file(path)); }

} // namespace unitile
