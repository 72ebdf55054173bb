// Printers for Kernel IR in the .ut text syntax. (Loop IR's printer is declared in Loop.h.)
#pragma once

#include "ir/Kernel.h"

#include <string>

namespace unitile {

/// One statement, `Y[i, j] += X[i, k] * W[k, j]`, without indentation or newline.
std::string to_string(const Comprehension& c);
/// Print one kernel in the text syntax; parse_module(to_string(k)) gives k back.
std::string to_string(const Kernel& k);
/// Print all kernels of a module, separated by blank lines.
std::string to_string(const Module& m);

} // namespace unitile
