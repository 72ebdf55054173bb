// Sliding-window geometry shared by convolution and pooling (see Window.h).
#include "ops/defs/Window.h"

#include <numeric>

namespace unitile::ops {

std::vector<int64_t> spatial_attr(const OpContext& ctx, const std::string& name, int64_t rank,
                                  int64_t fill, int64_t min_value) {
  std::vector<int64_t> v = ctx.attr_ints(name);
  if (v.empty())
    return std::vector<int64_t>(static_cast<size_t>(rank), fill);
  if (static_cast<int64_t>(v.size()) != rank)
    ctx.fail("attribute '{}' has {} values but the input has {} spatial dimensions", name,
             v.size(), rank);
  for (int64_t x : v)
    if (x < min_value)
      ctx.fail("attribute '{}' = {}: every value must be at least {}", name,
               attr_value_text(AttrValue{v}), min_value);
  return v;
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

Window read_window(const OpContext& ctx, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& in, bool has_dilations, bool has_auto_pad) {
  Window w;
  w.rank = static_cast<int64_t>(kernel.size());
  w.kernel = kernel;
  w.strides = spatial_attr(ctx, "strides", w.rank, 1, 1);
  w.dilations = has_dilations ? spatial_attr(ctx, "dilations", w.rank, 1, 1)
                              : std::vector<int64_t>(static_cast<size_t>(w.rank), 1);
  const std::string auto_pad = has_auto_pad ? ctx.attr_string("auto_pad") : "NOTSET";
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '{}'", auto_pad);
  if (auto_pad != "NOTSET" && !pads.empty())
    ctx.fail("pads cannot be given with auto_pad {}", auto_pad);
  w.pads_begin.assign(static_cast<size_t>(w.rank), 0);
  w.pads_end.assign(static_cast<size_t>(w.rank), 0);
  if (auto_pad == "NOTSET" && !pads.empty()) {
    if (static_cast<int64_t>(pads.size()) != 2 * w.rank)
      ctx.fail("attribute 'pads' has {} values but needs {} (begin values of the {} spatial "
               "dimensions, then end values)",
               pads.size(), 2 * w.rank, w.rank);
    for (int64_t p : pads)
      if (p < 0)
        ctx.fail("attribute 'pads' = {}: pads must not be negative", attr_value_text(AttrValue{pads}));
    for (int64_t d = 0; d < w.rank; ++d) {
      w.pads_begin[d] = pads[d];
      w.pads_end[d] = pads[w.rank + d];
    }
  }
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
    for (int64_t d = 0; d < w.rank; ++d) {
      // Output ceil(in / stride); the total padding that needs, the odd one at the end
      // (SAME_UPPER) or at the beginning (SAME_LOWER).
      const int64_t out = (in[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + w.span(d) - in[d]);
      w.pads_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads_end[d] = total - w.pads_begin[d];
    }
  return w;
}

int64_t window_out_extent(const OpContext& ctx, const Window& w, int64_t d, int64_t in,
                          bool ceil_mode) {
  const int64_t room = in + w.pads_begin[d] + w.pads_end[d] - w.span(d);
  if (room < 0)
    ctx.fail("spatial dimension {}: the window spans {} (kernel {}, dilation {}) but the padded "
             "input has only {}",
             d, w.span(d), w.kernel[d], w.dilations[d], in + w.pads_begin[d] + w.pads_end[d]);
  int64_t out = (ceil_mode ? (room + w.strides[d] - 1) / w.strides[d] : room / w.strides[d]) + 1;
  if (ceil_mode && (out - 1) * w.strides[d] >= in + w.pads_begin[d])
    --out;
  return out;
}

std::string affine(const std::vector<std::pair<std::string, int64_t>>& terms, int64_t offset) {
  std::string s;
  for (const auto& [v, c] : terms) {
    if (c == 0)
      continue;
    const int64_t mag = c < 0 ? -c : c;
    s += s.empty() ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + ");
    s += mag == 1 ? v : v + " * " + std::to_string(mag);
  }
  if (s.empty())
    return std::to_string(offset);
  if (offset > 0)
    s += " + " + std::to_string(offset);
  else if (offset < 0)
    s += " - " + std::to_string(-offset);
  return s;
}

std::pair<std::string, bool> forward_index(const Window& w, int64_t d, const std::string& y,
                                           const std::string& k, int64_t out, int64_t in) {
  const std::string idx =
      affine({{y, w.strides[d]}, {k, w.dilations[d]}}, -w.pads_begin[d]);
  const int64_t lo = -w.pads_begin[d];
  const int64_t hi = (out - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] - w.pads_begin[d];
  return {idx, lo < 0 || hi > in - 1};
}

BackIndex backward_index(const Window& w, int64_t d, const std::string& h, const std::string& k,
                         int64_t in, int64_t out) {
  BackIndex b;
  const std::string num = affine({{h, 1}, {k, -w.dilations[d]}}, w.pads_begin[d]);
  const int64_t s = w.strides[d];
  if (s == 1) {
    b.index = num;
  } else {
    b.index = "(" + num + ") // " + std::to_string(s);
    b.exact = "(" + num + ") % " + std::to_string(s) + " == 0";
  }
  const int64_t lo = floor_div(w.pads_begin[d] - (w.kernel[d] - 1) * w.dilations[d], s);
  const int64_t hi = floor_div(in - 1 + w.pads_begin[d], s);
  b.needs_guard = lo < 0 || hi > out - 1;
  return b;
}

namespace {
int64_t inverse_mod(int64_t a, int64_t m) {
  for (int64_t x = 1; x < m; ++x)
    if (a * x % m == 1)
      return x;
  return 0;
}
} // namespace

ResidueTaps residue_taps(const Window& w, int64_t d, const std::string& h, const std::string& t,
                         int64_t in, int64_t out) {
  const int64_t s = w.strides[d], dil = w.dilations[d], pad = w.pads_begin[d], K = w.kernel[d];
  const int64_t g = std::gcd(s, dil), T = s / g;
  const int64_t inv = T == 1 ? 0 : inverse_mod(dil / g % T, T);
  ResidueTaps r;
  r.taps = (K + T - 1) / T;
  auto k_of = [&](int64_t hv, int64_t tv) { return (T == 1 ? 0 : (hv + pad) / g * inv % T) + T * tv; };
  bool need_k = false, need_lo = false, need_hi = false;
  for (int64_t hv = 0; hv < in; ++hv) {
    if ((hv + pad) % g != 0)
      continue;
    for (int64_t tv = 0; tv < r.taps; ++tv) {
      const int64_t kv = k_of(hv, tv);
      if (kv >= K) {
        need_k = true;
        continue;
      }
      const int64_t yv = floor_div(hv + pad - kv * dil, s);
      need_lo = need_lo || yv < 0;
      need_hi = need_hi || yv >= out;
    }
  }
  const std::string hp = affine({{h, 1}}, pad);
  std::string base;
  if (T > 1)
    base = g == 1 && inv == 1 ? fmt::format("({}) % {}", hp, T)
                              : fmt::format("(({}) // {} * {}) % {}", hp, g, inv, T);
  if (base.empty())
    r.k = r.taps > 1 ? t : "0";
  else
    r.k = r.taps > 1 ? fmt::format("({} + {} * {})", base, T, t) : "(" + base + ")";
  if (dil == 1 && s > 1)
    r.y = r.taps > 1 ? fmt::format("(({}) // {} - {})", hp, s, t) : fmt::format("(({}) // {})", hp, s);
  else if (s == 1)
    r.y = "(" + affine({{h, 1}, {r.k, -dil}}, pad) + ")";
  else
    r.y = fmt::format("(({}) // {})", affine({{h, 1}, {r.k, -dil}}, pad), s);
  if (g > 1)
    r.conds.push_back(fmt::format("({}) % {} == 0", hp, g));
  if (need_k)
    r.conds.push_back(fmt::format("{} < {}", r.k, K));
  if (need_lo)
    r.conds.push_back(r.y + " >= 0");
  if (need_hi)
    r.conds.push_back(fmt::format("{} < {}", r.y, out));
  return r;
}

std::string guarded(const std::string& tensor, const std::vector<std::string>& idx, bool guard,
                    const std::string& value) {
  const std::string a = access(tensor, idx);
  return guard ? "(" + a + " ?? " + value + ")" : a;
}

std::string conjunction(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) {
    if (p.empty())
      continue;
    s += s.empty() ? p : " && " + p;
  }
  return s;
}

} // namespace unitile::ops
