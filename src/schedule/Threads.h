// threads V T: the launch whose outermost loop is V runs its parallel loops on blocks of
// T hardware threads (see Threads.cpp).
#pragma once

#include "hcd/Hcd.h"
#include "ir/Loop.h"

#include <cstdint>
#include <string>
#include <vector>

namespace unitile {

/// The loops `threads` would fuse in a launch: the grid.x loop `v` outermost (through
/// Lets) and the loops directly inside it whose stores all move with them. Empty when `v`
/// is not such a loop or the launch already has thread loops.
struct ThreadNest {
  std::vector<std::string> loops;
  int64_t iterations = 0;        // the product of their extents
  bool per_thread_loops = false; // each thread runs loops of its own (one row per thread)
};
ThreadNest thread_nest(const Stmt& body, const std::string& v);

/// Whether the launch has thread loops already.
bool runs_on_threads(const Stmt& body);

/// The threads of one block for `iterations` iterations: `requested`, or the iterations
/// rounded up to the warp size when fewer.
int64_t block_threads(int64_t requested, int64_t iterations, const hcd::Hcd& h);

/// threads: `v` (the outermost loop; a serial or vectorized one is made parallel first) and the loops
/// of its nest are fused and split into blocks of threads: grid.x blocks, thread.x threads.
Stmt threads_loop(const Stmt& body, const std::string& v, int64_t threads, const hcd::Hcd& h);

} // namespace unitile
