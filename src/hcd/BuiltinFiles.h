// The text of every src/hcd/devices/*.toml and src/backends/*/*.toml, compiled into the
// library by a build step (EmbedDevices.cmake), so built-in devices need no install path
// at run time.
#pragma once

#include <span>
#include <string_view>

namespace unitile::hcd {

struct BuiltinFile {
  std::string_view name; // the file's stem: "sim", "nvidia-h200", ...
  std::string_view text; // the whole TOML file
  std::string_view path; // where it sits in the source tree: "src/hcd/devices/sim.toml"
};

/// Sorted by name. Defined in the generated BuiltinFiles.cpp.
std::span<const BuiltinFile> builtin_files();

} // namespace unitile::hcd
