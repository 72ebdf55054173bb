// Reading .ut files from disk into SourceFiles and parsed, verified Modules.
#pragma once

#include "ir/Diagnostic.h"
#include "ir/Kernel.h"

#include <string>

namespace unitile {

/// The file's text; a missing or unreadable file is a UserError naming it.
SourceFile read_source_file(const std::string& path);
/// parse_module(read_source_file(path)).
Module load_module(const std::string& path);

} // namespace unitile
