// The matmul family: matmul (NumPy semantics with transposes), ONNX gemm, PyTorch
// linear, batch_matmul and a general einsum, with the backward ops of the first four.
//
// Every op is one contraction written as a comprehension: the output's indices on the
// left, the contracted index `k` a reduction variable on the right. Batch dimensions
// broadcast as in NumPy (a size-1 batch dimension is read at 0); their gradients sum
// over the broadcast dimensions with extent-1 `z<d>` left indices, as the elementwise
// family's do. A bias or a scale (gemm's alpha and beta, linear's bias) needs the
// finished sum, so it goes through a local holding the plain product: the product stays
// a GEMM the scheduler recognises.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace unitile::ops {
namespace {

// --- matmul: the shape of one instance -------------------------------------------------

// How matmul(A, B) lines up: batch dimensions (broadcast), the row index `m` unless A is
// a vector, the column index `n` unless B is a vector, the contracted index `k`.
struct MatmulShape {
  bool a_vec = false, b_vec = false, trans_a = false, trans_b = false;
  std::vector<int64_t> batch; // broadcast batch shape
  int64_t m = 1, n = 1, k = 1;
  std::vector<int64_t> out_shape;
  std::vector<std::string> out_idx; // i0.. for batch, then m, n as present
};

// The batch part of operand `t` (all but its last `mat_rank` dimensions).
TensorSpec batch_part(const TensorSpec& t, size_t mat_rank) {
  return {t.dtype, std::vector<int64_t>(t.shape.begin(), t.shape.end() - mat_rank)};
}

MatmulShape matmul_shape(const OpContext& ctx, const std::string& pa, const std::string& pb,
                         bool trans_a, bool trans_b) {
  const TensorSpec &a = ctx.in(pa), &b = ctx.in(pb);
  if (a.shape.empty() || b.shape.empty())
    ctx.fail("inputs '{}' {} and '{}' {} must have rank 1 or more (scalars are not matrices)", pa,
             shape_text(a.shape), pb, shape_text(b.shape));
  MatmulShape s;
  s.a_vec = a.shape.size() == 1;
  s.b_vec = b.shape.size() == 1;
  s.trans_a = trans_a && !s.a_vec;
  s.trans_b = trans_b && !s.b_vec;
  const size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t ka;
  if (s.a_vec) {
    ka = a.shape[0];
  } else {
    s.m = s.trans_a ? a.shape[ra - 1] : a.shape[ra - 2];
    ka = s.trans_a ? a.shape[ra - 2] : a.shape[ra - 1];
  }
  int64_t kb;
  if (s.b_vec) {
    kb = b.shape[0];
  } else {
    s.n = s.trans_b ? b.shape[rb - 2] : b.shape[rb - 1];
    kb = s.trans_b ? b.shape[rb - 1] : b.shape[rb - 2];
  }
  if (ka != kb)
    ctx.fail("the contracted dimensions differ: '{}' {}{} has {} and '{}' {}{} has {}", pa,
             shape_text(a.shape), s.trans_a ? " (transposed)" : "", ka, pb, shape_text(b.shape),
             s.trans_b ? " (transposed)" : "", kb);
  s.k = ka;
  s.batch = broadcast_shapes(ctx, {{pa, batch_part(a, s.a_vec ? 1 : 2)},
                                   {pb, batch_part(b, s.b_vec ? 1 : 2)}});
  s.out_shape = s.batch;
  s.out_idx = index_names(static_cast<int64_t>(s.batch.size()));
  if (!s.a_vec) {
    s.out_shape.push_back(s.m);
    s.out_idx.push_back("m");
  }
  if (!s.b_vec) {
    s.out_shape.push_back(s.n);
    s.out_idx.push_back("n");
  }
  return s;
}

// The batch indices that read operand `t` inside the output's batch nest.
std::vector<std::string> batch_read(const TensorSpec& t, size_t mat_rank, const MatmulShape& s) {
  return broadcast_indices(batch_part(t, mat_rank), static_cast<int64_t>(s.batch.size()),
                           s.batch);
}

// The batch indices that write the gradient of operand `t`: a broadcast dimension gets an
// extent-1 `z<d>` index (the output's index becomes a reduction); true when anything is
// summed over.
std::pair<std::vector<std::string>, bool> batch_write(const TensorSpec& t, size_t mat_rank,
                                                      const MatmulShape& s) {
  const TensorSpec bt = batch_part(t, mat_rank);
  const size_t off = s.batch.size() - bt.shape.size();
  std::vector<std::string> idx;
  bool reduces = off > 0;
  for (size_t d = 0; d < bt.shape.size(); ++d) {
    const size_t od = off + d;
    if (bt.shape[d] == 1 && s.batch[od] != 1) {
      idx.push_back("z" + std::to_string(od));
      reduces = true;
    } else {
      idx.push_back("i" + std::to_string(od));
    }
  }
  return {idx, reduces};
}

std::vector<std::string> a_matrix(const MatmulShape& s) {
  if (s.a_vec)
    return {"k"};
  return s.trans_a ? std::vector<std::string>{"k", "m"} : std::vector<std::string>{"m", "k"};
}
std::vector<std::string> b_matrix(const MatmulShape& s) {
  if (s.b_vec)
    return {"k"};
  return s.trans_b ? std::vector<std::string>{"n", "k"} : std::vector<std::string>{"k", "n"};
}
std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void require_numeric(const OpContext& ctx, const std::string& port) {
  if (ctx.in(port).dtype == DType::Bool)
    ctx.fail("input '{}' must be numeric, got bool", port);
}

// Y = A @ B: `Y[batch, m, n] += A[batch', m, k] * B[batch'', k, n]`.
void emit_matmul(OpContext& ctx, bool batched_only) {
  require_numeric(ctx, "A");
  ctx.require_same_dtype({"A", "B"});
  if (batched_only) {
    ctx.require_rank("A", 3);
    ctx.require_rank("B", 3);
    if (ctx.in("A").shape[0] != ctx.in("B").shape[0])
      ctx.fail("the batch dimensions differ: 'A' {} and 'B' {} (batch_matmul does not "
               "broadcast; matmul does)",
               shape_text(ctx.in("A").shape), shape_text(ctx.in("B").shape));
  }
  const MatmulShape s = matmul_shape(ctx, "A", "B", ctx.attr_bool("transA"),
                                     ctx.attr_bool("transB"));
  const TensorSpec &a = ctx.in("A"), &b = ctx.in("B");
  ctx.input("A");
  ctx.input("B");
  ctx.output("Y", a.dtype, s.out_shape);
  ctx.stmt(access("Y", s.out_idx) + " += " +
           access("A", concat(batch_read(a, s.a_vec ? 1 : 2, s), a_matrix(s))) + " * " +
           access("B", concat(batch_read(b, s.b_vec ? 1 : 2, s), b_matrix(s))));
}

// dA = dY @ B^T and dB = A^T @ dY, laid out as A and B are (transposed if they were),
// summed over the batch dimensions each was broadcast along.
void emit_matmul_grad(OpContext& ctx, bool batched_only) {
  ctx.require_float("A");
  ctx.require_same_dtype({"A", "B", "dY"});
  if (batched_only) {
    ctx.require_rank("A", 3);
    ctx.require_rank("B", 3);
  }
  const MatmulShape s = matmul_shape(ctx, "A", "B", ctx.attr_bool("transA"),
                                     ctx.attr_bool("transB"));
  const TensorSpec &a = ctx.in("A"), &b = ctx.in("B"), &dy = ctx.in("dY");
  if (dy.shape != s.out_shape)
    ctx.fail("dY has shape {} but A {} times B {} gives {}", shape_text(dy.shape),
             shape_text(a.shape), shape_text(b.shape), shape_text(s.out_shape));
  for (const char* p : {"A", "B", "dY"})
    ctx.input(p);
  ctx.output("dA", a.dtype, a.shape);
  ctx.output("dB", b.dtype, b.shape);
  const std::string g = access("dY", s.out_idx);
  {
    auto [bidx, reduces] = batch_write(a, s.a_vec ? 1 : 2, s);
    reduces = reduces || !s.b_vec; // n is summed
    ctx.stmt(access("dA", concat(bidx, a_matrix(s))) + (reduces ? " += " : " = ") + g + " * " +
             access("B", concat(batch_read(b, s.b_vec ? 1 : 2, s), b_matrix(s))));
  }
  {
    auto [bidx, reduces] = batch_write(b, s.b_vec ? 1 : 2, s);
    reduces = reduces || !s.a_vec; // m is summed
    ctx.stmt(access("dB", concat(bidx, b_matrix(s))) + (reduces ? " += " : " = ") +
             access("A", concat(batch_read(a, s.a_vec ? 1 : 2, s), a_matrix(s))) + " * " + g);
  }
}

// --- gemm --------------------------------------------------------------------------------

struct GemmShape {
  int64_t m, n, k;
};

GemmShape gemm_shape(const OpContext& ctx) {
  ctx.require_float("A");
  ctx.require_same_dtype({"A", "B", "C"});
  ctx.require_rank("A", 2);
  ctx.require_rank("B", 2);
  const bool ta = ctx.attr_bool("transA"), tb = ctx.attr_bool("transB");
  const auto &a = ctx.in("A").shape, &b = ctx.in("B").shape;
  const int64_t ka = ta ? a[0] : a[1], kb = tb ? b[1] : b[0];
  if (ka != kb)
    ctx.fail("the contracted dimensions differ: 'A' {}{} has {} and 'B' {}{} has {}",
             shape_text(a), ta ? " (transposed)" : "", ka, shape_text(b),
             tb ? " (transposed)" : "", kb);
  GemmShape s{ta ? a[1] : a[0], tb ? b[0] : b[1], ka};
  if (ctx.has("C")) {
    const TensorSpec& c = ctx.in("C");
    if (c.shape.size() > 2)
      ctx.fail("input 'C' must have rank 0, 1 or 2 (it broadcasts to [M, N] = {}), got {}",
               shape_text({s.m, s.n}), shape_text(c.shape));
    const std::vector<int64_t> mn = {s.m, s.n};
    const size_t off = 2 - c.shape.size();
    for (size_t d = 0; d < c.shape.size(); ++d)
      if (c.shape[d] != 1 && c.shape[d] != mn[off + d])
        ctx.fail("input 'C' {} does not broadcast to [M, N] = {}", shape_text(c.shape),
                 shape_text(mn));
  }
  return s;
}

std::string gemm_a(const OpContext& ctx) { return ctx.attr_bool("transA") ? "A[k, m]" : "A[m, k]"; }
std::string gemm_b(const OpContext& ctx) { return ctx.attr_bool("transB") ? "B[n, k]" : "B[k, n]"; }

// The indices that read C (rank 0, 1 or 2) broadcast to [M, N]: m, n, or 0.
std::vector<std::string> c_indices(const TensorSpec& c, int64_t m, int64_t n) {
  std::vector<std::string> idx;
  const std::vector<int64_t> mn = {m, n};
  const std::vector<std::string> names = {"m", "n"};
  const size_t off = 2 - c.shape.size();
  for (size_t d = 0; d < c.shape.size(); ++d)
    idx.push_back(c.shape[d] == 1 && mn[off + d] != 1 ? "0" : names[off + d]);
  return idx;
}

// Y = alpha * op(A) op(B) + beta * C.
void emit_gemm(OpContext& ctx) {
  const GemmShape s = gemm_shape(ctx);
  const double alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta");
  const DType dt = ctx.in("A").dtype;
  ctx.input("A");
  ctx.input("B");
  ctx.output("Y", dt, {s.m, s.n});
  const std::string prod = gemm_a(ctx) + " * " + gemm_b(ctx);
  if (!ctx.has("C") && alpha == 1.0) {
    ctx.stmt("Y[m, n] += " + prod);
    return;
  }
  ctx.local("P", compute_type(dt), {s.m, s.n});
  ctx.stmt("P[m, n] += " + prod);
  std::string y = "Y[m, n] = " + float_literal(alpha) + " * P[m, n]";
  if (ctx.has("C")) {
    ctx.input("C");
    y += " + " + float_literal(beta) + " * " + access("C", c_indices(ctx.in("C"), s.m, s.n));
  }
  ctx.stmt(y);
}

// dA = alpha * dY op(B)^T (transposed back when transA), dB likewise, dC = beta * dY
// summed over C's broadcast dimensions.
void emit_gemm_grad(OpContext& ctx) {
  const GemmShape s = gemm_shape(ctx);
  ctx.require_same_dtype({"A", "dY"});
  const TensorSpec& dy = ctx.in("dY");
  if (dy.shape != std::vector<int64_t>{s.m, s.n})
    ctx.fail("dY has shape {} but gemm gives {}", shape_text(dy.shape), shape_text({s.m, s.n}));
  const double alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta");
  const DType dt = ctx.in("A").dtype;
  for (const char* p : {"A", "B", "dY"})
    ctx.input(p);
  ctx.output("dA", dt, ctx.in("A").shape);
  ctx.output("dB", dt, ctx.in("B").shape);
  const std::string a_lhs = ctx.attr_bool("transA") ? "dA[k, m]" : "dA[m, k]";
  const std::string b_lhs = ctx.attr_bool("transB") ? "dB[n, k]" : "dB[k, n]";
  const std::string sa = alpha == 1.0 ? "" : float_literal(alpha) + " * ";
  ctx.stmt(a_lhs + " += " + sa + "dY[m, n] * " + gemm_b(ctx));
  ctx.stmt(b_lhs + " += " + sa + gemm_a(ctx) + " * dY[m, n]");
  if (ctx.has("C")) {
    const TensorSpec& c = ctx.in("C");
    ctx.input("C"); // only its shape matters; declared so the instance takes what gemm took
    ctx.output("dC", dt, c.shape);
    // dC's left indices: a broadcast dimension is an extent-1 z index; m or n missing
    // from C (rank < 2) are summed.
    std::vector<std::string> lhs;
    const std::vector<int64_t> mn = {s.m, s.n};
    const std::vector<std::string> names = {"m", "n"};
    const size_t off = 2 - c.shape.size();
    bool reduces = off > 0;
    for (size_t d = 0; d < c.shape.size(); ++d) {
      if (c.shape[d] == 1 && mn[off + d] != 1) {
        lhs.push_back("z" + std::to_string(d));
        reduces = true;
      } else {
        lhs.push_back(names[off + d]);
      }
    }
    ctx.stmt(access("dC", lhs) + (reduces ? " += " : " = ") + float_literal(beta) +
             " * dY[m, n]");
  }
}

// --- linear ------------------------------------------------------------------------------

struct LinearShape {
  std::vector<int64_t> out_shape;
  std::vector<std::string> lead; // indices of X's leading dimensions
  int64_t in_features, out_features;
};

LinearShape linear_shape(const OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "W", "B"});
  ctx.require_rank_at_least("X", 1);
  ctx.require_rank("W", 2);
  const auto &x = ctx.in("X").shape, &w = ctx.in("W").shape;
  LinearShape s;
  s.in_features = x.back();
  s.out_features = w[0];
  if (w[1] != s.in_features)
    ctx.fail("'W' {} must be [out_features, in_features] with in_features = {} (the last "
             "dimension of 'X' {})",
             shape_text(w), s.in_features, shape_text(x));
  if (ctx.has("B") && ctx.in("B").shape != std::vector<int64_t>{s.out_features})
    ctx.fail("'B' {} must be [out_features] = [{}]", shape_text(ctx.in("B").shape),
             s.out_features);
  s.lead = index_names(static_cast<int64_t>(x.size()) - 1);
  s.out_shape.assign(x.begin(), x.end() - 1);
  s.out_shape.push_back(s.out_features);
  return s;
}

// Y[..., o] = sum_k X[..., k] W[o, k] (+ B[o]).
void emit_linear(OpContext& ctx) {
  const LinearShape s = linear_shape(ctx);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.input("W");
  ctx.output("Y", dt, s.out_shape);
  const std::string prod =
      access("X", concat(s.lead, {"k"})) + " * W[o, k]";
  const std::vector<std::string> yi = concat(s.lead, {"o"});
  if (!ctx.has("B")) {
    ctx.stmt(access("Y", yi) + " += " + prod);
    return;
  }
  ctx.input("B");
  ctx.local("P", compute_type(dt), s.out_shape);
  ctx.stmt(access("P", yi) + " += " + prod);
  ctx.stmt(access("Y", yi) + " = " + access("P", yi) + " + B[o]");
}

// dX = dY W, dW = dY^T X (summed over the leading dimensions), dB = dY summed likewise.
void emit_linear_grad(OpContext& ctx) {
  const LinearShape s = linear_shape(ctx);
  ctx.require_same_dtype({"X", "dY"});
  if (ctx.in("dY").shape != s.out_shape)
    ctx.fail("dY has shape {} but linear gives {}", shape_text(ctx.in("dY").shape),
             shape_text(s.out_shape));
  const DType dt = ctx.in("X").dtype;
  for (const char* p : {"X", "W", "dY"})
    ctx.input(p);
  ctx.output("dX", dt, ctx.in("X").shape);
  ctx.output("dW", dt, ctx.in("W").shape);
  ctx.output("dB", dt, {s.out_features});
  const std::string g = access("dY", concat(s.lead, {"o"}));
  const bool lead = !s.lead.empty();
  ctx.stmt(access("dX", concat(s.lead, {"k"})) + " += " + g + " * W[o, k]");
  ctx.stmt(std::string("dW[o, k] ") + (lead ? "+= " : "= ") + g + " * " +
           access("X", concat(s.lead, {"k"})));
  ctx.stmt(std::string("dB[o] ") + (lead ? "+= " : "= ") + g);
}

// --- einsum ------------------------------------------------------------------------------

// Parses `equation` against the operands' ranks: per operand its labels with the
// ellipsis expanded into numbered batch labels, the output labels (explicit or NumPy's
// implicit order), and each label's extent. Ellipsis dimensions get the names `e<d>`
// (right-aligned, broadcast), letters their own.
struct Einsum {
  std::vector<std::vector<std::string>> in_labels;
  std::vector<std::string> out_labels;
  std::map<std::string, int64_t> extent;
};

Einsum parse_einsum(const OpContext& ctx, const std::vector<std::string>& ports) {
  std::string eq;
  for (char c : ctx.attr_string("equation"))
    if (c != ' ')
      eq += c;
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  const bool implicit = arrow == std::string::npos;
  const std::string rhs = implicit ? "" : eq.substr(arrow + 2);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != ports.size())
    ctx.fail("equation '{}' has {} operand term{} but {} input{} given", eq, terms.size(),
             terms.size() == 1 ? "" : "s", ports.size(), ports.size() == 1 ? " is" : "s are");
  auto check_chars = [&](const std::string& t, bool output) {
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (std::isalpha(static_cast<unsigned char>(c)))
        continue;
      if (c == '.' && t.compare(i, 3, "...") == 0) {
        i += 2;
        continue;
      }
      ctx.fail("equation '{}': unexpected '{}' in {} (labels are letters a-z, A-Z; '...' "
               "stands for broadcast dimensions{})",
               eq, c, output ? "the output" : "an operand",
               output ? "" : "; operands are separated by ',' and the output follows '->'");
    }
    const size_t first = t.find("...");
    if (first != std::string::npos && t.find("...", first + 3) != std::string::npos)
      ctx.fail("equation '{}': '...' appears twice in one term '{}'", eq, t);
  };
  Einsum e;
  size_t ell_rank = 0;
  std::vector<int64_t> ell_shape;
  std::vector<std::pair<std::string, TensorSpec>> ell_parts;
  std::map<std::string, int> count; // how many operand dimensions carry each letter label
  std::vector<std::string> letter_order;
  for (size_t t = 0; t < terms.size(); ++t) {
    check_chars(terms[t], false);
    const std::string& term = terms[t];
    const TensorSpec& x = ctx.in(ports[t]);
    const size_t ell = term.find("...");
    const size_t letters = term.size() - (ell == std::string::npos ? 0 : 3);
    const size_t rank = x.shape.size();
    if (ell == std::string::npos ? rank != letters : rank < letters)
      ctx.fail("equation '{}': operand {} '{}' has {} label{} but input '{}' has shape {}", eq, t,
               term, letters, letters == 1 ? "" : "s", ports[t], shape_text(x.shape));
    const size_t n_ell = rank - letters;
    std::vector<std::string> labels;
    std::vector<int64_t> ell_dims;
    for (size_t i = 0, d = 0; i < term.size();) {
      if (term[i] == '.') {
        for (size_t j = 0; j < n_ell; ++j, ++d)
          ell_dims.push_back(x.shape[d]);
        labels.insert(labels.end(), n_ell, "...");
        i += 3;
        continue;
      }
      const std::string l(1, term[i]);
      if (!count.count(l))
        letter_order.push_back(l);
      ++count[l];
      labels.push_back(l);
      ++i, ++d;
    }
    if (ell != std::string::npos) {
      ell_rank = std::max(ell_rank, n_ell);
      ell_parts.emplace_back(ports[t], TensorSpec{x.dtype, ell_dims});
    }
    e.in_labels.push_back(labels);
  }
  if (!ell_parts.empty())
    ell_shape = broadcast_shapes(ctx, ell_parts);
  // Ellipsis dimensions become labels e<d> of the broadcast ellipsis shape.
  const std::vector<std::string> ell_names = index_names(static_cast<int64_t>(ell_rank), "e");
  for (size_t t = 0; t < e.in_labels.size(); ++t) {
    auto& labels = e.in_labels[t];
    const size_t n_ell = static_cast<size_t>(std::count(labels.begin(), labels.end(), "..."));
    size_t j = ell_rank - n_ell;
    for (std::string& l : labels)
      if (l == "...")
        l = ell_names[j++];
  }
  for (size_t d = 0; d < ell_rank; ++d)
    e.extent[ell_names[d]] = ell_shape[d];
  // Letter extents: equal, or 1 (read at 0, NumPy's and PyTorch's broadcasting).
  for (size_t t = 0; t < e.in_labels.size(); ++t)
    for (size_t d = 0; d < e.in_labels[t].size(); ++d) {
      const std::string& l = e.in_labels[t][d];
      if (l[0] == 'e' && l.size() > 1)
        continue;
      const int64_t size = ctx.in(ports[t]).shape[d];
      int64_t& ext = e.extent.try_emplace(l, size).first->second;
      if (size == ext || size == 1)
        continue;
      if (ext == 1) {
        ext = size;
        continue;
      }
      ctx.fail("equation '{}': label '{}' has size {} in one place and {} in another (input "
               "'{}' dimension {})",
               eq, l, ext, size, ports[t], d);
    }
  if (implicit) {
    e.out_labels = ell_names;
    std::vector<std::string> once;
    for (const std::string& l : letter_order)
      if (count[l] == 1)
        once.push_back(l);
    std::sort(once.begin(), once.end());
    e.out_labels.insert(e.out_labels.end(), once.begin(), once.end());
  } else {
    check_chars(rhs, true);
    std::set<std::string> seen;
    for (size_t i = 0; i < rhs.size();) {
      if (rhs[i] == '.') {
        e.out_labels.insert(e.out_labels.end(), ell_names.begin(), ell_names.end());
        i += 3;
        continue;
      }
      const std::string l(1, rhs[i++]);
      if (!count.count(l))
        ctx.fail("equation '{}': output label '{}' appears in no operand", eq, l);
      if (!seen.insert(l).second)
        ctx.fail("equation '{}': output label '{}' appears twice", eq, l);
      e.out_labels.push_back(l);
    }
  }
  return e;
}

// A label's index variable: the letter itself, except `Y`, the output tensor's name.
std::string index_var(const std::string& label) { return label == "Y" ? "Y_" : label; }

// Whether dimension `d` of operand `t` is broadcast: size 1 against a larger extent.
bool einsum_broadcast(const OpContext& ctx, const Einsum& e, const std::vector<std::string>& ports,
                      size_t t, size_t d) {
  return ctx.in(ports[t]).shape[d] == 1 && e.extent.at(e.in_labels[t][d]) != 1;
}

// Operand `t` read inside the comprehension: its labels' variables, 0 where broadcast.
std::string einsum_read(const OpContext& ctx, const Einsum& e,
                        const std::vector<std::string>& ports, size_t t) {
  std::vector<std::string> idx;
  for (size_t d = 0; d < e.in_labels[t].size(); ++d)
    idx.push_back(einsum_broadcast(ctx, e, ports, t, d) ? "0" : index_var(e.in_labels[t][d]));
  return access(ports[t], idx);
}

std::vector<std::string> einsum_out_idx(const Einsum& e) {
  std::vector<std::string> idx;
  for (const std::string& l : e.out_labels)
    idx.push_back(index_var(l));
  return idx;
}

std::vector<int64_t> einsum_out_shape(const Einsum& e) {
  std::vector<int64_t> shape;
  for (const std::string& l : e.out_labels)
    shape.push_back(e.extent.at(l));
  return shape;
}

// Y[out labels] += X0[labels] * X1[labels] * ...: summed labels are the reduction
// variables, a repeated label reads a diagonal.
void emit_einsum(OpContext& ctx) {
  const std::vector<std::string> ports = ctx.variadic("X");
  for (const std::string& p : ports)
    require_numeric(ctx, p);
  ctx.require_same_dtype(ports);
  const Einsum e = parse_einsum(ctx, ports);
  std::vector<std::string> factors;
  std::set<std::string> used;
  for (size_t t = 0; t < ports.size(); ++t) {
    used.insert(e.in_labels[t].begin(), e.in_labels[t].end());
    ctx.input(ports[t]);
    factors.push_back(einsum_read(ctx, e, ports, t));
  }
  const bool reduces = used.size() > e.out_labels.size();
  ctx.output("Y", ctx.in(ports[0]).dtype, einsum_out_shape(e));
  ctx.stmt(access("Y", einsum_out_idx(e)) + (reduces ? " += " : " = ") + join(factors, " * "));
}

// The gradient into operand t is the einsum of dY with the other operands, into t's
// labels. Two statements in general: G[labels of t that dY or another operand reads
// unbroadcast] sums dY * (the others) over everything else (t's broadcast dimensions
// included), then dX_t[...] = G[...] spreads it: a repeated label writes its diagonal
// (a second variable `i_<d>` and the select `i == i_<d>`), a label only t has (summed
// inside t alone) broadcasts, a broadcast dimension is an extent-1 `z<d>`. When t's
// labels are distinct, unbroadcast and all in G, the first statement writes dX_t directly.
void emit_einsum_grad(OpContext& ctx) {
  const std::vector<std::string> ports = ctx.variadic("X");
  for (const std::string& p : ports)
    ctx.require_float(p);
  std::vector<std::string> all = ports;
  all.push_back("dY");
  ctx.require_same_dtype(all);
  const Einsum e = parse_einsum(ctx, ports);
  const std::vector<int64_t> out_shape = einsum_out_shape(e);
  if (ctx.in("dY").shape != out_shape)
    ctx.fail("dY has shape {} but the einsum gives {}", shape_text(ctx.in("dY").shape),
             shape_text(out_shape));
  for (const std::string& p : all)
    ctx.input(p);
  const DType dt = ctx.in(ports[0]).dtype;
  const std::string g = access("dY", einsum_out_idx(e));
  for (size_t t = 0; t < ports.size(); ++t) {
    const std::string dx = "d" + ports[t];
    const auto& labels = e.in_labels[t];
    // Labels read unbroadcast by dY or another operand, and the product of the others.
    std::set<std::string> bare(e.out_labels.begin(), e.out_labels.end());
    std::vector<std::string> factors = {g};
    for (size_t s = 0; s < ports.size(); ++s) {
      if (s == t)
        continue;
      factors.push_back(einsum_read(ctx, e, ports, s));
      for (size_t d = 0; d < e.in_labels[s].size(); ++d)
        if (!einsum_broadcast(ctx, e, ports, s, d))
          bare.insert(e.in_labels[s][d]);
    }
    // G's labels: t's unbroadcast labels that are read elsewhere, in order.
    std::vector<std::string> glabels;
    bool direct = true;
    for (size_t d = 0; d < labels.size(); ++d) {
      const std::string& l = labels[d];
      const bool repeated = std::find(labels.begin(), labels.begin() + d, l) != labels.begin() + d;
      if (einsum_broadcast(ctx, e, ports, t, d) || repeated || !bare.count(l)) {
        direct = false;
        continue;
      }
      glabels.push_back(l);
    }
    std::vector<std::string> gidx;
    std::vector<int64_t> gshape;
    for (const std::string& l : glabels) {
      gidx.push_back(index_var(l));
      gshape.push_back(e.extent.at(l));
    }
    const bool reduces = bare.size() > glabels.size();
    const std::string sum = (reduces ? " += " : " = ") + join(factors, " * ");
    ctx.output(dx, dt, ctx.in(ports[t]).shape);
    if (direct) {
      ctx.stmt(access(dx, gidx) + sum);
      continue;
    }
    const std::string gname = "G" + std::to_string(t);
    ctx.local(gname, compute_type(dt), gshape);
    ctx.stmt(access(gname, gidx) + sum);
    std::vector<std::string> lhs, conds;
    std::set<std::string> seen;
    for (size_t d = 0; d < labels.size(); ++d) {
      const std::string v = index_var(labels[d]);
      if (einsum_broadcast(ctx, e, ports, t, d)) {
        lhs.push_back("z" + std::to_string(d));
      } else if (!seen.insert(v).second) {
        lhs.push_back(v + "_" + std::to_string(d));
        conds.push_back(v + " == " + lhs.back());
      } else {
        lhs.push_back(v);
      }
    }
    const std::string value = access(gname, gidx);
    ctx.stmt(access(dx, lhs) + " = " +
             (conds.empty() ? value : join(conds, " && ") + " ? " + value + " : 0"));
  }
}

// --- definitions -------------------------------------------------------------------------

AttrSpec bool_attr(const char* name, const char* doc) {
  return {name, AttrKind::Bool, AttrValue{int64_t{0}}, doc};
}

} // namespace

void add_matmul_ops(std::vector<OpDef>& ops) {
  const std::vector<AttrSpec> trans = {
      bool_attr("transA", "use A's last two dimensions transposed"),
      bool_attr("transB", "use B's last two dimensions transposed")};
  for (bool batched : {false, true}) {
    OpDef op;
    op.name = batched ? "batch_matmul" : "matmul";
    op.category = "matmul";
    op.summary = batched ? "[b, m, k] @ [b, k, n] (equal batches, as torch.bmm)"
                         : "A @ B with NumPy semantics (1-D operands, broadcast batches)";
    op.inputs = {{"A"}, {"B"}};
    op.outputs = {{"Y"}};
    op.attrs = trans;
    op.emit = [batched](OpContext& ctx) { emit_matmul(ctx, batched); };
    op.gradient = op.name + "_grad";
    OpDef g;
    g.name = op.gradient;
    g.category = "matmul-backward";
    g.summary = "gradient of " + op.name + " (dA, dB; summed over broadcast batches)";
    g.inputs = {{"A"}, {"B"}, {"dY"}};
    g.outputs = {{"dA"}, {"dB"}};
    g.attrs = trans;
    g.emit = [batched](OpContext& ctx) { emit_matmul_grad(ctx, batched); };
    ops.push_back(std::move(op));
    ops.push_back(std::move(g));
  }

  const std::vector<AttrSpec> gemm_attrs = {
      {"alpha", AttrKind::Float, AttrValue{1.0}, "scale of A B"},
      {"beta", AttrKind::Float, AttrValue{1.0}, "scale of C"},
      bool_attr("transA", "use A transposed"), bool_attr("transB", "use B transposed")};
  OpDef gemm;
  gemm.name = "gemm";
  gemm.category = "matmul";
  gemm.summary = "alpha op(A) op(B) + beta C (ONNX Gemm; C optional, broadcast to [M, N])";
  gemm.inputs = {{"A"}, {"B"}, {"C", PortKind::Data, true}};
  gemm.outputs = {{"Y"}};
  gemm.attrs = gemm_attrs;
  gemm.emit = emit_gemm;
  gemm.gradient = "gemm_grad";
  OpDef gg;
  gg.name = "gemm_grad";
  gg.category = "matmul-backward";
  gg.summary = "gradient of gemm (dA, dB, and dC when C is given)";
  gg.inputs = {{"A"}, {"B"}, {"C", PortKind::Data, true}, {"dY"}};
  gg.outputs = {{"dA"}, {"dB"}, {"dC", PortKind::Data, true}};
  gg.attrs = gemm_attrs;
  gg.emit = emit_gemm_grad;
  ops.push_back(std::move(gemm));
  ops.push_back(std::move(gg));

  OpDef linear;
  linear.name = "linear";
  linear.category = "matmul";
  linear.summary = "X W^T + B (PyTorch layout: W is [out_features, in_features])";
  linear.inputs = {{"X"}, {"W"}, {"B", PortKind::Data, true}};
  linear.outputs = {{"Y"}};
  linear.emit = emit_linear;
  linear.gradient = "linear_grad";
  OpDef lg;
  lg.name = "linear_grad";
  lg.category = "matmul-backward";
  lg.summary = "gradient of linear (dX, dW, dB)";
  lg.inputs = {{"X"}, {"W"}, {"dY"}};
  lg.outputs = {{"dX"}, {"dW"}, {"dB"}};
  lg.emit = emit_linear_grad;
  ops.push_back(std::move(linear));
  ops.push_back(std::move(lg));

  OpDef einsum;
  einsum.name = "einsum";
  einsum.category = "matmul";
  einsum.summary = "Einstein summation ('bij,bjk->bik', 'ii->i', implicit output, '...')";
  einsum.inputs = {{"X", PortKind::Data, false, true}};
  einsum.outputs = {{"Y"}};
  einsum.attrs = {{"equation", AttrKind::String, std::nullopt,
                   "operand labels separated by ',', optionally '->' and the output's"}};
  einsum.emit = emit_einsum;
  einsum.gradient = "einsum_grad";
  OpDef eg;
  eg.name = "einsum_grad";
  eg.category = "matmul-backward";
  eg.summary = "gradient of einsum: dX0, dX1, ... from X0, X1, ... and dY";
  eg.inputs = {{"X", PortKind::Data, false, true}, {"dY"}};
  eg.outputs = {{"dX", PortKind::Data, false, true}};
  eg.attrs = einsum.attrs;
  eg.emit = emit_einsum_grad;
  ops.push_back(std::move(einsum));
  ops.push_back(std::move(eg));
}

} // namespace unitile::ops
