// Sliding-window geometry shared by convolution and pooling: spatial attributes
// (strides, pads in ONNX begin..end order, dilations, auto_pad), output sizes, and the
// index text of a window read with the guard it needs.
#pragma once

#include "ops/OpContext.h"

#include <string>
#include <utility>
#include <vector>

namespace unitile::ops {

/// The geometry of a window op over `rank` spatial dimensions (those after N and C).
struct Window {
  int64_t rank = 0;
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end;
  /// The extent a dilated kernel covers: (k - 1) * d + 1.
  int64_t span(int64_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }
};

/// A per-dimension integer list attribute: empty gives `fill` for every dimension,
/// otherwise it must have `rank` entries, each at least `min_value`.
std::vector<int64_t> spatial_attr(const OpContext& ctx, const std::string& name, int64_t rank,
                                  int64_t fill, int64_t min_value);

/// Reads strides, dilations (when `has_dilations`), pads and auto_pad (when `has_auto_pad`)
/// for a kernel of the given spatial extents over an input of `in` spatial extents,
/// resolving SAME_UPPER / SAME_LOWER / VALID into explicit pads (ONNX's rules).
Window read_window(const OpContext& ctx, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& in, bool has_dilations, bool has_auto_pad);

/// The output extent of a window sliding over `in` (floor, or ceil with PyTorch's rule
/// that the last window must start inside the input or its begin padding); a UserError
/// when the window does not fit.
int64_t window_out_extent(const OpContext& ctx, const Window& w, int64_t d, int64_t in,
                          bool ceil_mode);

/// `a*x + b*y + c` as Kernel IR index text, leaving out zero terms and unit factors.
std::string affine(const std::vector<std::pair<std::string, int64_t>>& terms, int64_t offset);

/// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b);

/// Index text of the input read by output position `y` and window offset `k` along
/// dimension `d`: `y*s + k*dil - pad`, and whether it can leave [0, in) for outputs in
/// [0, out).
std::pair<std::string, bool> forward_index(const Window& w, int64_t d, const std::string& y,
                                           const std::string& k, int64_t out, int64_t in);

/// The transposed read: the output position `(h + pad - k*dil) / s` that input position
/// `h` (in [0, in)) reaches through window offset `k`, as index text; the condition that
/// the division is exact ("" when the stride is 1); and whether the index can leave
/// [0, out).
struct BackIndex {
  std::string index, exact;
  bool needs_guard = false;
};
BackIndex backward_index(const Window& w, int64_t d, const std::string& h, const std::string& k,
                         int64_t in, int64_t out);

/// The window offsets that reach input position `h` (extent `in`) along dimension d,
/// stepped by residue: k*dil = h + pad (mod s) fixes k modulo T = s / gcd(s, dil), so only
/// k = k0(h) + T*t for t in [0, taps) can reach h, each from the exact output position
/// y = (h + pad - k*dil) / s (extent `out`). `k` and `y` are index text in h and t
/// (t stands for 0 when taps is 1); `conds` are the tests, needed somewhere in the range,
/// that h has such offsets at all, that k is inside the kernel and y inside [0, out).
/// Against testing every offset for an exact division this visits s/gcd(s, dil) times
/// fewer (a 16x16 stride-16 window: 1 offset per position instead of 256).
struct ResidueTaps {
  std::string k, y;
  std::vector<std::string> conds;
  int64_t taps = 1;
};
ResidueTaps residue_taps(const Window& w, int64_t d, const std::string& h, const std::string& t,
                         int64_t in, int64_t out);

/// `X[...] ?? v` when `guard`, else `X[...]`.
std::string guarded(const std::string& tensor, const std::vector<std::string>& idx, bool guard,
                    const std::string& value);

/// `a && b && ...` of the non-empty parts ("" when none).
std::string conjunction(const std::vector<std::string>& parts);

} // namespace unitile::ops
