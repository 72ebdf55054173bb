// flash_attention: attention written as four comprehensions (scores, row max, row sum,
// weighted sum of values) becomes one launch with an online softmax, so the N x N score
// matrix is never written to memory.
//
// Why it must exist: as written, attention is four statements over an N x N local S.
// Lowered one by one they write S (N^2 elements per head) to memory, read it back three
// times and, with a causal mask, compute the whole square only to multiply half of it by
// zero. No composition of the loop primitives fixes this: the row max must be known before
// the first exp, so the statements cannot simply share a loop over keys. The online
// softmax (a running max and sum, rescaling what was accumulated whenever the max grows)
// removes that dependency; it changes the arithmetic, not just the loops, so it is a pass
// that recognises the whole pattern and builds the fused nest, and refuses anything it
// does not recognise exactly (the kernel then keeps its statement-by-statement lowering).
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// Block sizes of the fused nest: query rows per task and keys per step of the loop over
/// keys. Both positive; the register tiles inside are derived from them and the HCD.
struct FlashBlocks {
  int64_t rows = 0;
  int64_t keys = 0;
};

/// One attention chain of a kernel: four consecutive statements
///   S[B.., i, j] += f(B.., i, j, r..)                 (any sum over reduction axes r)
///   m[B.., i]    max= S[B.., i, j]          or  c ? S[B.., i, j] : -inf
///   l[B.., i]    += exp(S - m)              or  c ? exp(S - m) : 0
///   O[B.., i, d] += exp(S - m) / l * g      or  (c ? exp(S - m) / l : 0) * g   (and the
///                                               other orders of these products)
/// with S, m, l locals of f32 or f64 that no other statement touches, one mask condition c
/// (the same in all three, over B.., i, j) and g any expression over B.., j, d (usually
/// V[B.., j, d]). B.. are the leading (batch, head) indices.
struct AttentionSite {
  size_t first = 0; // the scores statement; the chain is first .. first + 3
  std::string scores, row_max, row_sum, output;
  std::vector<int64_t> batch;  // extents of the leading indices
  int64_t queries = 0, keys = 0, head_dim = 0;
  bool masked = false;
  /// A causal mask `j <= i + offset` (one conjunct of c): key blocks beyond it are skipped.
  std::optional<int64_t> causal_offset;
  DType score_type = DType::F32; // S's dtype: the score tile and the softmax state
  DType accumulator = DType::F32; // the output's compute type
};

/// Every attention chain of `k` under bindings `b`.
std::vector<AttentionSite> attention_sites(const Kernel& k, const ShapeBindings& b);

/// The analytic block sizes for `site` on `hcd`: a key block whose K and V tiles take half
/// of L1, query rows whose Q, output and score tiles take the other half, in multiples of
/// the register tile, reduced until there are two tasks per compute unit.
FlashBlocks flash_blocks(const AttentionSite& site, const hcd::Hcd& hcd);

/// Why `blocks` were chosen for `site` (working sets, registers, tasks): --explain lines.
std::vector<std::string> flash_reasons(const AttentionSite& site, const FlashBlocks& blocks, const hcd::Hcd& hcd);

/// The fused launch on blocks of SIMT threads (an HCD with `simt_blocks`): a block per
/// (leading indices, block of `rows` query rows) of threads_y x threads_x threads; per key
/// block of `keys` keys the block copies the K and V tiles (and once the Q tile) into
/// shared memory, each thread computes a (rows / threads_y) x (keys / threads_x) tile of
/// scores into a shared score tile, one thread per row runs the online softmax on it, and
/// each thread accumulates a (rows / threads_y) x ceil(head_dim / threads_x) tile of the
/// output in registers; barriers between the phases.
struct FlashThreads {
  int64_t rows = 0, keys = 0, threads_y = 0, threads_x = 0;
};

/// The analytic SIMT blocks for the chain writing `output` on `hcd`, or nullopt with the
/// reason in `why` (not blocks of SIMT threads; the tiles do not fit shared memory or the
/// registers). Sizes: a quarter of max_threads_per_block, up to 4 rows and 2 keys per
/// thread, fewer while the tiles exceed the problem, the shared budget or half of a
/// thread's registers, or while there are fewer blocks than compute units.
std::optional<FlashThreads> flash_threads(const Kernel& k, const ShapeBindings& b, const std::string& output,
                                          const hcd::Hcd& hcd, std::string* why = nullptr);

/// Why `t` was chosen (threads, shared memory bytes against the HCD, registers per
/// thread, blocks over compute units): --explain lines.
std::vector<std::string> flash_thread_reasons(const Kernel& k, const ShapeBindings& b, const std::string& output,
                                              const FlashThreads& t, const hcd::Hcd& hcd);

/// Replace the launches of the attention chain that writes `output` by one fused launch
/// (see the file comment) and drop S, m and l from the program's buffers. `blocks` empty:
/// the analytic sizes; {rows, keys}: those; {rows, keys, threads_y, threads_x}: the
/// launch on blocks of SIMT threads (FlashThreads). The chain's launches must be as lowering made
/// them (flash_attention comes before primitives that change them). A kernel without such
/// a chain, or another mismatch, is a UserError that says which rule failed.
LoopProgram flash_attention(const Kernel& k, const LoopProgram& p, const ShapeBindings& b, const hcd::Hcd& hcd,
                            const std::string& output, const std::vector<int64_t>& blocks);

} // namespace unitile
