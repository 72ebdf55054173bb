// Small queries shared by the primitives that rewrite Kernel IR (inline, widen,
// pretranspose): the one statement writing a tensor, and a tensor name not yet taken.
#pragma once

#include "ir/Diagnostic.h"
#include "ir/Kernel.h"

#include <functional>
#include <string>

namespace unitile {

/// The index of the one statement of `k` writing `buffer`; when none or several do, throws
/// `fail(why)` (the caller's error, naming its primitive).
size_t only_writer(const Kernel& k, const std::string& buffer,
                   const std::function<UserError(const std::string&)>& fail);

/// `base`, or `base` + 2, 3, ... : the first name no tensor, param or index variable of
/// `k` uses.
std::string unused_name(const Kernel& k, const std::string& base);

} // namespace unitile
