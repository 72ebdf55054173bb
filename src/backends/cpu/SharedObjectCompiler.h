// C-dialect source -> shared object, by spawning the compiler that the compile options
// name (the HCD's toolchain: host `cc`, or a cross compiler) in a private temp dir.
// Shared by the cpu plugin and the cpu-cross plugins, which differ only in where the
// shared object is then loaded.
#pragma once

#include "unitile/device.h"

#include <string>
#include <vector>

namespace unitile::cpu {

/// $TMPDIR, or /tmp.
std::string temp_root();

/// Whitespace-separated words of `s` (NULL gives none).
std::vector<std::string> split_words(const char* s);

/// Run args[0] (searched in PATH) with stdout and stderr going to `log_path`. Returns the
/// exit status, or -1 with `why` set when the process could not be started or died.
int run_process(const std::vector<std::string>& args, const std::string& log_path,
                std::string* why);

/// True when `program` names an executable: a path, or a name found on PATH.
bool find_program(const std::string& program);

/// The first line of `compiler --version`, or "<compiler>: unknown".
std::string compiler_version(const std::string& compiler);

/// Compile `source` with `options` (the compiler, then its flags; empty means `cc`) into
/// a shared object's bytes. On failure returns UT_ERROR_UNAVAILABLE (the compiler cannot
/// run), UT_ERROR_COMPILE (with its log) or UT_ERROR_INTERNAL, and sets `message`, whose
/// first word is `device` followed by a colon.
ut_status compile_shared_object(const std::string& device, const char* source, const char* options,
                                std::vector<unsigned char>* shared_object, std::string* message);

} // namespace unitile::cpu
