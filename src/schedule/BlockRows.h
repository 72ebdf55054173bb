// block_rows V T: one block of T threads per row, the row's loops strided over them and
// its reductions combined through a shared-memory tree (see BlockRows.cpp).
#pragma once

#include "hcd/Hcd.h"
#include "ir/Loop.h"

#include <cstdint>
#include <string>

namespace unitile {

/// The longest loop of the row that block_rows would share among threads in the launch
/// whose grid.x loop (outermost, through Lets) is `v`, or 0 when it does not apply.
int64_t block_rows_extent(const Stmt& body, const std::string& v);

/// block_rows: the rows of loop `v` on blocks of `threads` threads (a power of two).
Stmt block_rows(const LoopProgram& p, const Stmt& body, const std::string& v, int64_t threads, const hcd::Hcd& h);

} // namespace unitile
