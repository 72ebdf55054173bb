// Preparation of a Loop IR func into typed evaluation nodes, and running it.
//
// Each expression becomes a node that yields an int64_t (integer and bool types) or a
// double (float types); each statement a node that executes. Nodes are small final
// classes with one virtual call each, which keeps the interpreter at roughly a
// nanosecond or two per node: a 128^3 matmul runs in well under a second.
#include "backends/sim/SimKernel.h"

#include <cstring>

#include "backends/sim/SimNumerics.h"
#include "ir/Verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace unitile::sim {

namespace {

constexpr int kMaxRank = 8;

// ---- run-time state ----

struct Ctx {
  int64_t* iv = nullptr;  // integer and bool variables
  double* fv = nullptr;   // float variables
  char** buf = nullptr;   // data pointer per buffer slot (program buffers, then allocations)
  std::vector<std::vector<double>>* falloc = nullptr;
  std::vector<std::vector<int64_t>>* ialloc = nullptr;
  const std::string* where = nullptr; // "sim: kernel 'K' (func F)"
  Tracer* trace = nullptr;            // set for a traced run (SimTrace.h)
};

struct IExpr {
  virtual ~IExpr() = default;
  virtual int64_t eval(Ctx& c) const = 0;
};
struct FExpr {
  virtual ~FExpr() = default;
  virtual double eval(Ctx& c) const = 0;
};
struct SNode {
  virtual ~SNode() = default;
  virtual void exec(Ctx& c) const = 0;
};
using IP = std::unique_ptr<IExpr>;
using FP = std::unique_ptr<FExpr>;
using SP = std::unique_ptr<SNode>;

// ---- expression nodes ----

struct IConst final : IExpr {
  int64_t v;
  explicit IConst(int64_t x) : v(x) {}
  int64_t eval(Ctx&) const override { return v; }
};
struct FConst final : FExpr {
  double v;
  explicit FConst(double x) : v(x) {}
  double eval(Ctx&) const override { return v; }
};
struct IVar final : IExpr {
  int slot;
  explicit IVar(int s) : slot(s) {}
  int64_t eval(Ctx& c) const override { return c.iv[slot]; }
};
struct FVar final : FExpr {
  int slot;
  explicit FVar(int s) : slot(s) {}
  double eval(Ctx& c) const override { return c.fv[slot]; }
};

template <class F> struct IUn final : IExpr {
  IP a;
  F f;
  IUn(IP x, F fn) : a(std::move(x)), f(fn) {}
  int64_t eval(Ctx& c) const override { return f(a->eval(c)); }
};
template <class F> struct FUn final : FExpr {
  FP a;
  F f;
  FUn(FP x, F fn) : a(std::move(x)), f(fn) {}
  double eval(Ctx& c) const override { return f(a->eval(c)); }
};
template <class F> struct IBin final : IExpr {
  IP a, b;
  F f;
  IBin(IP x, IP y, F fn) : a(std::move(x)), b(std::move(y)), f(fn) {}
  int64_t eval(Ctx& c) const override { return f(a->eval(c), b->eval(c)); }
};
template <class F> struct FBin final : FExpr {
  FP a, b;
  F f;
  FBin(FP x, FP y, F fn) : a(std::move(x)), b(std::move(y)), f(fn) {}
  double eval(Ctx& c) const override { return f(a->eval(c), b->eval(c)); }
};
template <class F> struct FTer final : FExpr {
  FP a, b, d;
  F f;
  FTer(FP x, FP y, FP z, F fn) : a(std::move(x)), b(std::move(y)), d(std::move(z)), f(fn) {}
  double eval(Ctx& c) const override { return f(a->eval(c), b->eval(c), d->eval(c)); }
};
// Float operands, integer (bool) result: comparisons, isnan, casts to integers.
template <class F> struct IFromF final : IExpr {
  FP a;
  F f;
  IFromF(FP x, F fn) : a(std::move(x)), f(fn) {}
  int64_t eval(Ctx& c) const override { return f(a->eval(c)); }
};
template <class F> struct IFromFF final : IExpr {
  FP a, b;
  F f;
  IFromFF(FP x, FP y, F fn) : a(std::move(x)), b(std::move(y)), f(fn) {}
  int64_t eval(Ctx& c) const override { return f(a->eval(c), b->eval(c)); }
};
struct FFromI final : FExpr {
  IP a;
  explicit FFromI(IP x) : a(std::move(x)) {}
  double eval(Ctx& c) const override { return static_cast<double>(a->eval(c)); }
};

// Integer division and modulo: a zero divisor is a launch error naming the expression.
template <class F> struct IDivide final : IExpr {
  IP a, b;
  F f;
  std::string text;
  IDivide(IP x, IP y, F fn, std::string t) : a(std::move(x)), b(std::move(y)), f(fn), text(std::move(t)) {}
  int64_t eval(Ctx& c) const override {
    int64_t x = a->eval(c), y = b->eval(c);
    if (y == 0) throw LaunchError(fmt::format("{}: integer division by zero in `{}`", *c.where, text));
    return f(x, y);
  }
};

struct IAnd final : IExpr {
  IP a, b;
  IAnd(IP x, IP y) : a(std::move(x)), b(std::move(y)) {}
  int64_t eval(Ctx& c) const override { return a->eval(c) != 0 && b->eval(c) != 0; }
};
struct IOr final : IExpr {
  IP a, b;
  IOr(IP x, IP y) : a(std::move(x)), b(std::move(y)) {}
  int64_t eval(Ctx& c) const override { return a->eval(c) != 0 || b->eval(c) != 0; }
};
struct ISelect final : IExpr {
  IP cond, a, b;
  ISelect(IP k, IP x, IP y) : cond(std::move(k)), a(std::move(x)), b(std::move(y)) {}
  int64_t eval(Ctx& c) const override { return cond->eval(c) ? a->eval(c) : b->eval(c); }
};
struct FSelect final : FExpr {
  IP cond;
  FP a, b;
  FSelect(IP k, FP x, FP y) : cond(std::move(k)), a(std::move(x)), b(std::move(y)) {}
  double eval(Ctx& c) const override { return cond->eval(c) ? a->eval(c) : b->eval(c); }
};

// ---- storage ----

// How a buffer slot holds its elements: global buffers in their dtype, allocations as
// doubles (floats) or int64 (integers, kept wrapped to their dtype by the store).
enum class Storage : uint8_t { F16, BF16, F32, F64, I8, I16, I32, I64, U8, Bool, AllocF, AllocI };

template <Storage S> struct Cell;
template <> struct Cell<Storage::F16> {
  using T = uint16_t;
  static constexpr bool is_float = true;
  static double get(const T* p) { return f16_bits_to_f32(*p); }
  static void put(T* p, double v) { *p = f32_to_f16_bits(static_cast<float>(v)); }
};
template <> struct Cell<Storage::BF16> {
  using T = uint16_t;
  static constexpr bool is_float = true;
  static double get(const T* p) { return bf16_bits_to_f32(*p); }
  static void put(T* p, double v) { *p = f32_to_bf16_bits(static_cast<float>(v)); }
};
template <> struct Cell<Storage::F32> {
  using T = float;
  static constexpr bool is_float = true;
  static double get(const T* p) { return *p; }
  static void put(T* p, double v) { *p = static_cast<float>(v); }
};
template <> struct Cell<Storage::F64> {
  using T = double;
  static constexpr bool is_float = true;
  static double get(const T* p) { return *p; }
  static void put(T* p, double v) { *p = v; }
};
template <> struct Cell<Storage::AllocF> : Cell<Storage::F64> {};
template <class I> struct IntCell {
  using T = I;
  static constexpr bool is_float = false;
  static int64_t get(const T* p) { return static_cast<int64_t>(*p); }
  static void put(T* p, int64_t v) { *p = static_cast<T>(v); } // modular since C++20
};
template <> struct Cell<Storage::I8> : IntCell<int8_t> {};
template <> struct Cell<Storage::I16> : IntCell<int16_t> {};
template <> struct Cell<Storage::I32> : IntCell<int32_t> {};
template <> struct Cell<Storage::I64> : IntCell<int64_t> {};
template <> struct Cell<Storage::U8> : IntCell<uint8_t> {};
template <> struct Cell<Storage::AllocI> : IntCell<int64_t> {};
template <> struct Cell<Storage::Bool> {
  using T = uint8_t;
  static constexpr bool is_float = false;
  static int64_t get(const T* p) { return *p != 0; }
  static void put(T* p, int64_t v) { *p = v != 0; }
};

Storage global_storage(DType t) {
  switch (t) {
  case DType::F16: return Storage::F16;
  case DType::BF16: return Storage::BF16;
  case DType::F32: return Storage::F32;
  case DType::F64: return Storage::F64;
  case DType::I8: return Storage::I8;
  case DType::I16: return Storage::I16;
  case DType::I32: return Storage::I32;
  case DType::I64: return Storage::I64;
  case DType::U8: return Storage::U8;
  case DType::Bool: return Storage::Bool;
  }
  return Storage::F32;
}

int64_t wrap_to(DType t, int64_t v) {
  switch (t) {
  case DType::I8: return static_cast<int8_t>(v);
  case DType::I16: return static_cast<int16_t>(v);
  case DType::I32: return static_cast<int32_t>(v);
  case DType::U8: return static_cast<uint8_t>(v);
  case DType::Bool: return v != 0;
  default: return v;
  }
}

double round_to(DType t, double v) {
  switch (t) {
  case DType::F32: return round_to_f32(v);
  case DType::F16: return round_to_f16(v);
  case DType::BF16: return round_to_bf16(v);
  default: return v;
  }
}

// The part of an access or store that finds the element: slot, shape, indices.
struct Place {
  int slot = 0;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  IP idx[kMaxRank];
  std::string name;
  bool in_vector = false; // inside a vectorized or thread loop (for the trace)

  // The row-major offset, or -1 when some index is out of range (`vals` gets them all).
  int64_t offset(Ctx& c, int64_t* vals) const {
    uint64_t off = 0; // unsigned: out-of-range indices may wrap it, harmlessly
    bool out = false;
    for (int k = 0; k < rank; ++k) {
      int64_t v = idx[k]->eval(c);
      vals[k] = v;
      out |= static_cast<uint64_t>(v) >= static_cast<uint64_t>(shape[k]);
      off = off * static_cast<uint64_t>(shape[k]) + static_cast<uint64_t>(v);
    }
    return out ? -1 : static_cast<int64_t>(off);
  }

  [[noreturn]] void fail(Ctx& c, const int64_t* vals, const char* what) const {
    std::string idx_text, why;
    for (int k = 0; k < rank; ++k) {
      if (k) idx_text += ", ";
      idx_text += std::to_string(vals[k]);
      if (why.empty() && static_cast<uint64_t>(vals[k]) >= static_cast<uint64_t>(shape[k]))
        why = fmt::format("index {} is {} but the extent is {}", k, vals[k], shape[k]);
    }
    throw LaunchError(fmt::format("{}: out-of-range {} {}[{}]: {}", *c.where, what, name, idx_text, why));
  }
};

template <Storage S> struct FAccess final : FExpr {
  Place at;
  FP guard;
  double eval(Ctx& c) const override {
    int64_t vals[kMaxRank];
    int64_t off = at.offset(c, vals);
    if (off < 0) {
      if (guard) return guard->eval(c);
      at.fail(c, vals, "read");
    }
    if (c.trace) [[unlikely]]
      c.trace->access(at.slot, off, false, at.in_vector);
    auto v = Cell<S>::get(reinterpret_cast<const typename Cell<S>::T*>(c.buf[at.slot]) + off);
    if constexpr (Cell<S>::is_float)
      return v;
    else
      return static_cast<double>(v);
  }
};
template <Storage S> struct IAccess final : IExpr {
  Place at;
  IP guard;
  int64_t eval(Ctx& c) const override {
    int64_t vals[kMaxRank];
    int64_t off = at.offset(c, vals);
    if (off < 0) {
      if (guard) return guard->eval(c);
      at.fail(c, vals, "read");
    }
    if (c.trace) [[unlikely]]
      c.trace->access(at.slot, off, false, at.in_vector);
    auto v = Cell<S>::get(reinterpret_cast<const typename Cell<S>::T*>(c.buf[at.slot]) + off);
    if constexpr (Cell<S>::is_float)
      return float_to_int(v);
    else
      return v;
  }
};

// ---- statement nodes ----

template <Storage S> struct SStore final : SNode {
  Place at;
  std::conditional_t<Cell<S>::is_float, FP, IP> value;
  OpRecord ops;
  void exec(Ctx& c) const override {
    // The element first, so a scatter's bad index is reported as the write it is.
    int64_t vals[kMaxRank];
    int64_t off = at.offset(c, vals);
    if (off < 0) at.fail(c, vals, "write");
    auto v = value->eval(c);
    if (c.trace) [[unlikely]] {
      c.trace->ops(ops);
      c.trace->access(at.slot, off, true, at.in_vector);
    }
    Cell<S>::put(reinterpret_cast<typename Cell<S>::T*>(c.buf[at.slot]) + off, v);
  }
};

struct SBlock final : SNode {
  std::vector<SP> body;
  void exec(Ctx& c) const override {
    for (const SP& s : body) s->exec(c);
  }
};
struct SNop final : SNode {
  void exec(Ctx&) const override {}
};
struct SFor final : SNode {
  int slot;
  IP min, extent;
  SP body;
  bool vectorized = false;
  void exec(Ctx& c) const override {
    int64_t lo = min->eval(c), n = extent->eval(c);
    if (c.trace && n > 0) [[unlikely]]
      c.trace->loop(n, vectorized);
    int64_t* v = &c.iv[slot];
    for (int64_t i = 0; i < n; ++i) {
      *v = lo + i;
      body->exec(c);
    }
  }
};
struct SIf final : SNode {
  IP cond;
  SP then_case, else_case;
  void exec(Ctx& c) const override {
    if (cond->eval(c))
      then_case->exec(c);
    else if (else_case)
      else_case->exec(c);
  }
};
struct SLetI final : SNode {
  int slot;
  IP value;
  SP body;
  void exec(Ctx& c) const override {
    c.iv[slot] = value->eval(c);
    body->exec(c);
  }
};
struct SLetF final : SNode {
  int slot;
  FP value;
  SP body;
  OpRecord ops;
  void exec(Ctx& c) const override {
    c.fv[slot] = value->eval(c);
    if (c.trace) [[unlikely]]
      c.trace->ops(ops);
    body->exec(c);
  }
};
// Fresh, zeroed storage on every entry, so a run never sees a previous iteration's data.
struct SAllocate final : SNode {
  int slot, index;
  bool is_float;
  size_t elems;
  SP body;
  void exec(Ctx& c) const override {
    if (is_float) {
      auto& v = (*c.falloc)[index];
      v.assign(elems, 0.0);
      c.buf[slot] = reinterpret_cast<char*>(v.data());
    } else {
      auto& v = (*c.ialloc)[index];
      v.assign(elems, 0);
      c.buf[slot] = reinterpret_cast<char*>(v.data());
    }
    body->exec(c);
  }
};
// A perfect nest of thread loops whose body has top-level barriers: every thread runs
// segment 1, then every thread runs segment 2, and so on, which is what the barriers
// between the segments promise.
struct SThreadNest final : SNode {
  struct Axis {
    int slot;
    IP min, extent;
  };
  std::vector<Axis> axes; // outermost first
  std::vector<SP> segments;
  void exec(Ctx& c) const override {
    size_t n = axes.size();
    int64_t lo[3], ext[3];
    for (size_t k = 0; k < n; ++k) {
      lo[k] = axes[k].min->eval(c);
      ext[k] = axes[k].extent->eval(c);
      if (ext[k] <= 0) return;
    }
    for (const SP& seg : segments) {
      int64_t it[3] = {0, 0, 0};
      bool done = false;
      while (!done) {
        for (size_t k = 0; k < n; ++k) c.iv[axes[k].slot] = lo[k] + it[k];
        seg->exec(c);
        // Advance the innermost axis first, like the loops it stands for.
        for (size_t k = n;;) {
          if (k == 0) {
            done = true;
            break;
          }
          --k;
          if (++it[k] < ext[k]) break;
          it[k] = 0;
        }
      }
    }
  }
};

// A perfect nest of grid (or parallel) loops, iterated as one linear space of
// iterations (block ids). Untraced it is the plain nest; traced, and not already inside
// a distributed loop, it spreads the iterations over the tracer's units (SimTrace.h).
struct SParallelNest final : SNode {
  struct Axis {
    int slot;
    IP min, extent;
  };
  std::vector<Axis> axes; // outermost first; inner bounds do not depend on outer vars
  SP body;

  void run_one(Ctx& c, const int64_t* lo, const int64_t* ext, int64_t linear) const {
    for (size_t k = axes.size(); k-- > 0;) {
      c.iv[axes[k].slot] = lo[k] + linear % ext[k];
      linear /= ext[k];
    }
    body->exec(c);
  }

  void exec(Ctx& c) const override {
    size_t n = axes.size();
    std::vector<int64_t> lo(n), ext(n);
    int64_t total = 1;
    for (size_t k = 0; k < n; ++k) {
      lo[k] = axes[k].min->eval(c);
      ext[k] = axes[k].extent->eval(c);
      if (ext[k] <= 0) return;
      total *= ext[k];
    }
    Tracer* t = c.trace;
    if (!t || t->distributing || t->units <= 1) {
      for (int64_t i = 0; i < total; ++i) run_one(c, lo.data(), ext.data(), i);
      return;
    }
    const int64_t units = t->units;
    const int64_t chunk = (total + units - 1) / units;
    const int outer_unit = t->unit;
    t->distributing = true;
    for (int64_t w = 0; w < chunk; ++w) {
      for (int64_t u = 0; u < units; ++u) {
        int64_t i = u * chunk + w;
        if (i >= total) break;
        t->unit = static_cast<int>(u);
        t->block_start();
        run_one(c, lo.data(), ext.data(), i);
      }
    }
    t->unit = outer_unit;
    t->distributing = false;
  }
};

// Element access by storage kind at run time, for the tile statements (which touch
// buffers of several storages in one node).
double get_float(Storage s, const char* base, int64_t off) {
  switch (s) {
  case Storage::F16: return Cell<Storage::F16>::get(reinterpret_cast<const uint16_t*>(base) + off);
  case Storage::BF16: return Cell<Storage::BF16>::get(reinterpret_cast<const uint16_t*>(base) + off);
  case Storage::F32: return Cell<Storage::F32>::get(reinterpret_cast<const float*>(base) + off);
  case Storage::F64:
  case Storage::AllocF: return Cell<Storage::F64>::get(reinterpret_cast<const double*>(base) + off);
  default: break;
  }
  internal_fail(__FILE__, __LINE__, "sim: a matrix tile in an integer buffer");
}
void put_float(Storage s, char* base, int64_t off, double v) {
  switch (s) {
  case Storage::F16: return Cell<Storage::F16>::put(reinterpret_cast<uint16_t*>(base) + off, v);
  case Storage::BF16: return Cell<Storage::BF16>::put(reinterpret_cast<uint16_t*>(base) + off, v);
  case Storage::F32: return Cell<Storage::F32>::put(reinterpret_cast<float*>(base) + off, v);
  case Storage::F64:
  case Storage::AllocF: return Cell<Storage::F64>::put(reinterpret_cast<double*>(base) + off, v);
  default: break;
  }
  internal_fail(__FILE__, __LINE__, "sim: a matrix tile in an integer buffer");
}

// f32 rounded to tf32 (10 mantissa bits) to nearest, ties away from zero, as the tensor
// cores' cvt.rna.tf32.f32 does; inf and NaN pass through.
double round_to_tf32(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) {
    bits += 0x1000u; // half of the 13 dropped bits: ties away from zero on the magnitude
    bits &= 0xffffe000u;
  }
  std::memcpy(&f, &bits, 4);
  return f;
}

// One tile operation of a matrix unit (Loop.h, MatrixOp), run as the whole tile: the sim
// has no lanes, so the statement's one execution per warp is the whole operation.
struct SMatrix final : SNode {
  struct Tile {
    Place at;
    Storage storage = Storage::AllocF;
    int64_t row_stride = 0; // elements between rows (the last dimension's extent)
  };
  MatrixOp op = MatrixOp::Zero;
  int64_t m = 0, n = 0, k = 0;
  Tile target, a, b; // Store: a is the accumulator
  OpRecord ops;      // per execution

  // Offset of the tile's origin; every element of an m x n tile must be inside unless
  // `clip` (then rows/cols get how many are).
  int64_t origin(Ctx& c, const Tile& t, int64_t rows, int64_t cols, bool clip, int64_t* rows_in,
                 int64_t* cols_in) const {
    int64_t vals[kMaxRank];
    const Place& p = t.at;
    uint64_t off = 0;
    for (int d = 0; d < p.rank; ++d) {
      vals[d] = p.idx[d]->eval(c);
      off = off * static_cast<uint64_t>(p.shape[d]) + static_cast<uint64_t>(vals[d]);
    }
    bool out = false;
    for (int d = 0; d + 2 < p.rank; ++d) out |= static_cast<uint64_t>(vals[d]) >= static_cast<uint64_t>(p.shape[d]);
    const int64_t r0 = vals[p.rank - 2], c0 = vals[p.rank - 1];
    const int64_t R = p.shape[p.rank - 2], C = p.shape[p.rank - 1];
    // A clipped tile may lie wholly past the end (a warp's tile beyond M): nothing of it
    // is stored.
    out |= r0 < 0 || c0 < 0;
    *rows_in = std::max<int64_t>(0, std::min(rows, R - r0));
    *cols_in = std::max<int64_t>(0, std::min(cols, C - c0));
    if (!clip) out |= *rows_in < rows || *cols_in < cols;
    if (out) {
      // Name the element past the end.
      vals[p.rank - 2] = r0 + (clip ? 0 : rows - 1);
      vals[p.rank - 1] = c0 + (clip ? 0 : cols - 1);
      p.fail(c, vals, clip ? "matrix tile at" : "matrix tile");
    }
    return static_cast<int64_t>(off);
  }

  void exec(Ctx& c) const override {
    int64_t rows = 0, cols = 0;
    const bool store = op == MatrixOp::Store;
    const int64_t t0 = origin(c, target, m, n, store, &rows, &cols);
    char* tb = c.buf[target.at.slot];
    const int64_t ts = target.row_stride;
    if (c.trace) [[unlikely]]
      c.trace->ops(ops);
    auto touch = [&](const Tile& t, int64_t off, bool is_store) {
      if (c.trace) [[unlikely]]
        c.trace->access(t.at.slot, off, is_store, true);
    };
    if (op == MatrixOp::Zero) {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t q = 0; q < n; ++q) {
          touch(target, t0 + r * ts + q, true);
          put_float(target.storage, tb, t0 + r * ts + q, 0.0);
        }
      return;
    }
    int64_t ar = 0, ac = 0;
    if (store) {
      const int64_t s0 = origin(c, a, m, n, false, &ar, &ac);
      const char* sb = c.buf[a.at.slot];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q) {
          touch(a, s0 + r * a.row_stride + q, false);
          touch(target, t0 + r * ts + q, true);
          put_float(target.storage, tb, t0 + r * ts + q, get_float(a.storage, sb, s0 + r * a.row_stride + q));
        }
      return;
    }
    const int64_t a0 = origin(c, a, m, k, false, &ar, &ac);
    // B's element (x, q): row x, column q; in pairs (MmaPairs) row x / 2, column 2 q + x % 2.
    const bool pairs = op == MatrixOp::MmaPairs;
    const int64_t b0 = pairs ? origin(c, b, k / 2, 2 * n, false, &ar, &ac) : origin(c, b, k, n, false, &ar, &ac);
    auto b_at = [&](int64_t x, int64_t q) {
      return pairs ? b0 + (x / 2) * b.row_stride + 2 * q + x % 2 : b0 + x * b.row_stride + q;
    };
    const char* abase = c.buf[a.at.slot];
    const char* bbase = c.buf[b.at.slot];
    const bool tf32 = op == MatrixOp::MmaTf32;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t q = 0; q < n; ++q) {
        double acc = get_float(target.storage, tb, t0 + r * ts + q);
        for (int64_t x = 0; x < k; ++x) {
          double av = get_float(a.storage, abase, a0 + r * a.row_stride + x);
          double bv = get_float(b.storage, bbase, b_at(x, q));
          if (tf32) {
            av = round_to_tf32(av);
            bv = round_to_tf32(bv);
          }
          acc += av * bv;
        }
        put_float(target.storage, tb, t0 + r * ts + q, acc);
      }
    if (c.trace) [[unlikely]] {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t x = 0; x < k; ++x) touch(a, a0 + r * a.row_stride + x, false);
      for (int64_t x = 0; x < k; ++x)
        for (int64_t q = 0; q < n; ++q) touch(b, b_at(x, q), false);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t q = 0; q < n; ++q) {
          touch(target, t0 + r * ts + q, false);
          touch(target, t0 + r * ts + q, true);
        }
    }
  }
};

bool is_parallel(ForKind k) {
  return k == ForKind::Parallel || k == ForKind::GridX || k == ForKind::GridY || k == ForKind::GridZ;
}

bool is_thread(ForKind k) {
  return k == ForKind::ThreadX || k == ForKind::ThreadY || k == ForKind::ThreadZ;
}

bool contains_barrier(const Stmt& s) {
  if (!s) return false;
  if (s->kind == StmtKind::Barrier) return true;
  for (const Stmt& b : s->body)
    if (contains_barrier(b)) return true;
  return false;
}

} // namespace

// ---- preparation ----

struct SimKernel::Compiled {
  int n_ivars = 0, n_fvars = 0, n_bufs = 0, n_falloc = 0, n_ialloc = 0;
  std::vector<std::pair<bool, int>> param_slots; // (is_float, slot) per param
  std::vector<size_t> buffer_bytes;              // bytes each program buffer needs
  std::string where;
  std::vector<SlotInfo> slots;
  SP body;
};

namespace {

class Preparer {
public:
  Preparer(const LoopProgram& p, const LoopFunc& f, SimKernel::Compiled& out) : p_(p), f_(f), out_(out) {
    out_.where = fmt::format("sim: kernel '{}' (func {})", p.kernel, f.name);
    for (const LoopBuffer& b : p.buffers) {
      if (b.shape.size() > static_cast<size_t>(kMaxRank))
        unsupported(fmt::format("buffer '{}' has {} dimensions; the sim supports up to {}", b.name,
                                b.shape.size(), kMaxRank));
      BufInfo info{out_.n_bufs++, global_storage(b.dtype), b.dtype, b.shape};
      buffers_.push_back({b.name, info});
      size_t elems = element_count(b.name, b.shape);
      out_.buffer_bytes.push_back(elems * static_cast<size_t>(dtype_bytes(b.dtype)));
      out_.slots.push_back({b.name, b.dtype, MemScope::Global, static_cast<int64_t>(elems)});
    }
    for (const ParamDecl& prm : p.params) {
      bool fl = is_float(prm.dtype);
      int slot = fl ? out_.n_fvars++ : out_.n_ivars++;
      out_.param_slots.push_back({fl, slot});
      vars_.push_back({prm.name, {fl, slot}});
    }
    out_.body = stmt(f.body);
  }

private:
  struct BufInfo {
    int slot;
    Storage storage;
    DType dtype;
    std::vector<int64_t> shape;
  };
  struct VarInfo {
    bool is_float;
    int slot;
  };

  const LoopProgram& p_;
  const LoopFunc& f_;
  SimKernel::Compiled& out_;
  std::vector<std::pair<std::string, BufInfo>> buffers_; // innermost (allocations) last
  std::vector<std::pair<std::string, VarInfo>> vars_;
  bool in_thread_loop_ = false;
  bool in_vector_loop_ = false; // a vectorized or thread loop encloses the statement

  // The arithmetic of a statement's value: one operation per arithmetic node, select and
  // comparison, kTranscendentalOps per transcendental call, nothing for casts and for
  // index arithmetic (addresses are the memory model's business, not the ALUs').
  void count_ops(const Expr& e, OpRecord& r) const {
    if (!e) return;
    auto charge = [&](DType t, double n) {
      auto& table = in_vector_loop_ ? r.vector : r.scalar;
      table[static_cast<size_t>(t)] += n;
    };
    switch (e->kind) {
    case ExprKind::Access:
      count_ops(e->guard, r); // indices are addresses
      return;
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Select:
      charge(e->operands.back()->type, 1);
      break;
    case ExprKind::Call:
      switch (e->math_fn) {
      case MathFn::Abs: case MathFn::Min: case MathFn::Max: case MathFn::Floor: case MathFn::Ceil:
      case MathFn::Round: case MathFn::Trunc: case MathFn::Sign: case MathFn::IsNan: case MathFn::IsInf:
        charge(e->operands[0]->type, 1);
        break;
      case MathFn::Fma: charge(e->operands[0]->type, 2); break;
      case MathFn::Sqrt: case MathFn::Rsqrt: charge(e->operands[0]->type, 4); break;
      default:
        charge(e->operands[0]->type, in_vector_loop_ ? kTranscendentalOps : kScalarTranscendentalOps);
        r.math_calls += 1;
      }
      break;
    default: break;
    }
    for (const Expr& o : e->operands) count_ops(o, r);
  }

  // Whether `e` reads buffer[indices] itself: an accumulation into that element.
  static bool reads_element(const Expr& e, const std::string& buffer, const std::vector<Expr>& indices) {
    bool found = false;
    visit(e, [&](const Expr& x) {
      if (found || x->kind != ExprKind::Access || x->name != buffer || x->operands.size() != indices.size()) return;
      bool same = true;
      for (size_t k = 0; k < indices.size() && same; ++k) same = equal(x->operands[k], indices[k]);
      found = same;
    });
    return found;
  }

  SP parallel_nest(const Stmt& outer) {
    auto n = std::make_unique<SParallelNest>();
    std::vector<const StmtNode*> loops{outer.get()};
    Stmt body = outer->body[0];
    // Inner loops join the nest while their bounds are constants (so they cannot
    // depend on the outer variables) and they are grid or parallel loops too.
    while (body->kind == StmtKind::For && is_parallel(body->for_kind) &&
           body->min->kind == ExprKind::IntImm && body->extent->kind == ExprKind::IntImm) {
      loops.push_back(body.get());
      body = body->body[0];
    }
    for (const StmtNode* l : loops) n->axes.push_back({0, int_expr(l->min), int_expr(l->extent)});
    for (size_t k = 0; k < loops.size(); ++k) {
      n->axes[k].slot = out_.n_ivars++;
      vars_.push_back({loops[k]->var, {false, n->axes[k].slot}});
    }
    n->body = stmt(body);
    vars_.resize(vars_.size() - loops.size());
    return n;
  }

  // Elements of a buffer or allocation; a size that would overflow offsets is refused, so
  // that offsets (int64) and byte counts (size_t) are exact for every in-range index.
  size_t element_count(const std::string& name, const std::vector<int64_t>& shape) const {
    constexpr uint64_t kLimit = uint64_t(1) << 48;
    uint64_t elems = 1;
    for (int64_t d : shape) {
      if (d != 0 && elems > kLimit / static_cast<uint64_t>(d))
        unsupported(fmt::format("'{}' has more than 2^48 elements", name));
      elems *= static_cast<uint64_t>(d);
    }
    return static_cast<size_t>(elems);
  }

  [[noreturn]] void unsupported(const std::string& msg) const {
    throw UnsupportedError(fmt::format("sim: kernel '{}' (func {}): {}", p_.kernel, f_.name, msg));
  }

  const BufInfo& buffer(const std::string& name) const {
    for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it)
      if (it->first == name) return it->second;
    internal_fail(__FILE__, __LINE__, "sim: unknown buffer '" + name + "' after verification");
  }
  const VarInfo& variable(const std::string& name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return it->second;
    internal_fail(__FILE__, __LINE__, "sim: unknown variable '" + name + "' after verification");
  }

  Place place(const std::string& name, const std::vector<Expr>& indices) {
    const BufInfo& b = buffer(name);
    Place at;
    at.slot = b.slot;
    at.rank = static_cast<int>(indices.size());
    at.name = name;
    at.in_vector = in_vector_loop_;
    for (int k = 0; k < at.rank; ++k) {
      at.shape[k] = b.shape[static_cast<size_t>(k)];
      at.idx[k] = int_expr(indices[static_cast<size_t>(k)]);
    }
    return at;
  }

  // ---- expressions ----

  // A value as a bool (int64 0 or 1): conditions, `&&`, `||`, `!`.
  IP bool_expr(const Expr& e) {
    if (is_float(e->type)) return std::make_unique<IFromF<bool (*)(double)>>(float_expr(e), [](double x) { return x != 0; });
    if (e->type == DType::Bool) return int_expr(e);
    return std::make_unique<IUn<int64_t (*)(int64_t)>>(int_expr(e), [](int64_t x) -> int64_t { return x != 0; });
  }

  template <class F> static IP ibin(IP a, IP b, F f) { return std::make_unique<IBin<F>>(std::move(a), std::move(b), f); }
  template <class F> static FP fbin(FP a, FP b, F f) { return std::make_unique<FBin<F>>(std::move(a), std::move(b), f); }
  template <class F> static FP fun(FP a, F f) { return std::make_unique<FUn<F>>(std::move(a), f); }
  template <class F> static IP iun(IP a, F f) { return std::make_unique<IUn<F>>(std::move(a), f); }
  template <class F> static IP ifromf(FP a, F f) { return std::make_unique<IFromF<F>>(std::move(a), f); }
  template <class F> static IP iff(FP a, FP b, F f) { return std::make_unique<IFromFF<F>>(std::move(a), std::move(b), f); }

  template <Storage S> IP iaccess(const Expr& e) {
    auto n = std::make_unique<IAccess<S>>();
    n->at = place(e->name, e->operands);
    if (e->guard) n->guard = int_expr(e->guard);
    return n;
  }
  template <Storage S> FP faccess(const Expr& e) {
    auto n = std::make_unique<FAccess<S>>();
    n->at = place(e->name, e->operands);
    if (e->guard) n->guard = float_expr(e->guard);
    return n;
  }
  template <bool Float> auto access_node(const Expr& e) {
    switch (buffer(e->name).storage) {
#define UT_SIM_ACCESS(S)                                                                 \
  case Storage::S:                                                                        \
    if constexpr (Float) return faccess<Storage::S>(e); else return iaccess<Storage::S>(e);
      UT_SIM_ACCESS(F16) UT_SIM_ACCESS(BF16) UT_SIM_ACCESS(F32) UT_SIM_ACCESS(F64)
      UT_SIM_ACCESS(I8) UT_SIM_ACCESS(I16) UT_SIM_ACCESS(I32) UT_SIM_ACCESS(I64)
      UT_SIM_ACCESS(U8) UT_SIM_ACCESS(Bool) UT_SIM_ACCESS(AllocF) UT_SIM_ACCESS(AllocI)
#undef UT_SIM_ACCESS
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown storage");
  }

  // An expression whose IR type is an integer or bool, as int64.
  IP int_expr(const Expr& e) {
    if (is_float(e->type)) {
      // Only reached when an integer is wanted from a float (an integer cast handles
      // its own operand): truncate like a cast would.
      return ifromf(float_expr(e), [](double x) { return float_to_int(x); });
    }
    DType t = e->type;
    switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::BoolImm: return std::make_unique<IConst>(e->int_value);
    case ExprKind::FloatImm: return std::make_unique<IConst>(wrap_to(t, float_to_int(e->float_value)));
    case ExprKind::Var: {
      const VarInfo& v = variable(e->name);
      if (v.is_float) return ifromf(std::make_unique<FVar>(v.slot), [](double x) { return float_to_int(x); });
      return std::make_unique<IVar>(v.slot);
    }
    case ExprKind::Access: return access_node<false>(e);
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Not) return iun(bool_expr(e->operands[0]), [](int64_t x) -> int64_t { return !x; });
      if (e->unary_op == UnaryOp::BitNot)
        return wrap_node(e->type, iun(int_expr(e->operands[0]), [](int64_t x) -> int64_t { return ~x; }));
      return iun(int_expr(e->operands[0]), [](int64_t x) { return wrap_neg(x); });
    case ExprKind::Binary: return int_binary(e);
    case ExprKind::Select:
      return std::make_unique<ISelect>(bool_expr(e->operands[0]), int_expr(e->operands[1]), int_expr(e->operands[2]));
    case ExprKind::Cast: return int_cast(t, e->operands[0]);
    case ExprKind::Call: return int_call(e);
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown expression kind");
  }

  IP int_cast(DType t, const Expr& x) {
    if (t == DType::Bool) return bool_expr(x);
    if (is_float(x->type)) {
      switch (t) {
      case DType::I8: return ifromf(float_expr(x), [](double v) { return wrap_to(DType::I8, float_to_int(v)); });
      case DType::I16: return ifromf(float_expr(x), [](double v) { return wrap_to(DType::I16, float_to_int(v)); });
      case DType::I32: return ifromf(float_expr(x), [](double v) { return wrap_to(DType::I32, float_to_int(v)); });
      case DType::U8: return ifromf(float_expr(x), [](double v) { return wrap_to(DType::U8, float_to_int(v)); });
      default: return ifromf(float_expr(x), [](double v) { return float_to_int(v); });
      }
    }
    return wrap_node(t, int_expr(x));
  }

  static IP wrap_node(DType t, IP x) {
    switch (t) {
    case DType::I8: return iun(std::move(x), [](int64_t v) { return wrap_to(DType::I8, v); });
    case DType::I16: return iun(std::move(x), [](int64_t v) { return wrap_to(DType::I16, v); });
    case DType::I32: return iun(std::move(x), [](int64_t v) { return wrap_to(DType::I32, v); });
    case DType::U8: return iun(std::move(x), [](int64_t v) { return wrap_to(DType::U8, v); });
    case DType::Bool: return iun(std::move(x), [](int64_t v) -> int64_t { return v != 0; });
    default: return x;
    }
  }

  IP int_binary(const Expr& e) {
    const Expr& a = e->operands[0];
    const Expr& b = e->operands[1];
    BinaryOp op = e->binary_op;
    if (op == BinaryOp::And) return std::make_unique<IAnd>(bool_expr(a), bool_expr(b));
    if (op == BinaryOp::Or) return std::make_unique<IOr>(bool_expr(a), bool_expr(b));
    if (is_comparison(op)) {
      if (is_float(promote(a->type, b->type))) {
        FP x = float_expr(a), y = float_expr(b);
        switch (op) {
        case BinaryOp::Lt: return iff(std::move(x), std::move(y), [](double p, double q) -> int64_t { return p < q; });
        case BinaryOp::Le: return iff(std::move(x), std::move(y), [](double p, double q) -> int64_t { return p <= q; });
        case BinaryOp::Gt: return iff(std::move(x), std::move(y), [](double p, double q) -> int64_t { return p > q; });
        case BinaryOp::Ge: return iff(std::move(x), std::move(y), [](double p, double q) -> int64_t { return p >= q; });
        case BinaryOp::Eq: return iff(std::move(x), std::move(y), [](double p, double q) -> int64_t { return p == q; });
        default: return iff(std::move(x), std::move(y), [](double p, double q) -> int64_t { return p != q; });
        }
      }
      IP x = int_expr(a), y = int_expr(b);
      switch (op) {
      case BinaryOp::Lt: return ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) -> int64_t { return p < q; });
      case BinaryOp::Le: return ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) -> int64_t { return p <= q; });
      case BinaryOp::Gt: return ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) -> int64_t { return p > q; });
      case BinaryOp::Ge: return ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) -> int64_t { return p >= q; });
      case BinaryOp::Eq: return ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) -> int64_t { return p == q; });
      default: return ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) -> int64_t { return p != q; });
      }
    }
    IP x = int_expr(a), y = int_expr(b);
    switch (op) {
    case BinaryOp::Add: return ibin(std::move(x), std::move(y), wrap_add);
    case BinaryOp::Sub: return ibin(std::move(x), std::move(y), wrap_sub);
    case BinaryOp::Mul: return ibin(std::move(x), std::move(y), wrap_mul);
    case BinaryOp::Div: return divide(std::move(x), std::move(y), trunc_div, e);
    case BinaryOp::FloorDiv: return divide(std::move(x), std::move(y), floor_div, e);
    case BinaryOp::Mod: return divide(std::move(x), std::move(y), floor_mod, e);
    // Integers are held sign- (or zero-) extended in int64, so the 64-bit bitwise result
    // wrapped to the dtype is the dtype's own.
    case BinaryOp::BitAnd: return wrap_node(e->type, ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) { return p & q; }));
    case BinaryOp::BitOr: return wrap_node(e->type, ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) { return p | q; }));
    case BinaryOp::BitXor: return wrap_node(e->type, ibin(std::move(x), std::move(y), [](int64_t p, int64_t q) { return p ^ q; }));
    case BinaryOp::Shl:
    case BinaryOp::Shr: {
      const int64_t bits = 8 * dtype_bytes(e->type);
      if (op == BinaryOp::Shl)
        return wrap_node(e->type, ibin(std::move(x), std::move(y), [bits](int64_t p, int64_t q) -> int64_t {
                           return q >= 0 && q < bits ? static_cast<int64_t>(static_cast<uint64_t>(p) << q) : 0;
                         }));
      return wrap_node(e->type, ibin(std::move(x), std::move(y), [bits](int64_t p, int64_t q) -> int64_t {
                         return q >= 0 && q < bits ? p >> q : (p < 0 ? -1 : 0);
                       }));
    }
    default: break;
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown integer binary op");
  }

  template <class F> static IP divide(IP x, IP y, F f, const Expr& e) {
    return std::make_unique<IDivide<F>>(std::move(x), std::move(y), f, to_string(e));
  }

  IP int_call(const Expr& e) {
    const auto& args = e->operands;
    switch (e->math_fn) {
    case MathFn::IsNan:
      if (!is_float(args[0]->type)) return std::make_unique<IConst>(0);
      return ifromf(float_expr(args[0]), [](double x) -> int64_t { return std::isnan(x); });
    case MathFn::IsInf:
      if (!is_float(args[0]->type)) return std::make_unique<IConst>(0);
      return ifromf(float_expr(args[0]), [](double x) -> int64_t { return std::isinf(x); });
    case MathFn::Abs: return iun(int_expr(args[0]), [](int64_t x) { return x < 0 ? wrap_neg(x) : x; });
    case MathFn::Sign: return iun(int_expr(args[0]), [](int64_t x) -> int64_t { return (x > 0) - (x < 0); });
    case MathFn::Min: return ibin(int_expr(args[0]), int_expr(args[1]), [](int64_t x, int64_t y) { return std::min(x, y); });
    case MathFn::Max: return ibin(int_expr(args[0]), int_expr(args[1]), [](int64_t x, int64_t y) { return std::max(x, y); });
    case MathFn::Floor:
    case MathFn::Ceil:
    case MathFn::Round:
    case MathFn::Trunc: return int_expr(args[0]);
    default:
      // Other functions of integers compute in double and convert back like a cast.
      return wrap_node(e->type, ifromf(float_call(e), [](double x) { return float_to_int(x); }));
    }
  }

  // An expression as a double; integer-typed expressions convert.
  FP float_expr(const Expr& e) {
    if (!is_float(e->type)) return std::make_unique<FFromI>(int_expr(e));
    switch (e->kind) {
    case ExprKind::IntImm: return std::make_unique<FConst>(static_cast<double>(e->int_value));
    case ExprKind::FloatImm: return std::make_unique<FConst>(e->float_value);
    case ExprKind::BoolImm: return std::make_unique<FConst>(static_cast<double>(e->int_value));
    case ExprKind::Var: {
      const VarInfo& v = variable(e->name);
      if (v.is_float) return std::make_unique<FVar>(v.slot);
      return std::make_unique<FFromI>(std::make_unique<IVar>(v.slot));
    }
    case ExprKind::Access: return access_node<true>(e);
    case ExprKind::Unary: return fun(float_expr(e->operands[0]), [](double x) { return -x; });
    case ExprKind::Binary: {
      FP x = float_expr(e->operands[0]), y = float_expr(e->operands[1]);
      switch (e->binary_op) {
      case BinaryOp::Add: return fbin(std::move(x), std::move(y), [](double p, double q) { return p + q; });
      case BinaryOp::Sub: return fbin(std::move(x), std::move(y), [](double p, double q) { return p - q; });
      case BinaryOp::Mul: return fbin(std::move(x), std::move(y), [](double p, double q) { return p * q; });
      case BinaryOp::Div: return fbin(std::move(x), std::move(y), [](double p, double q) { return p / q; });
      case BinaryOp::FloorDiv: return fbin(std::move(x), std::move(y), float_floor_div);
      case BinaryOp::Mod: return fbin(std::move(x), std::move(y), float_mod);
      default: break;
      }
      internal_fail(__FILE__, __LINE__, "sim: a comparison typed as a float");
    }
    case ExprKind::Select:
      return std::make_unique<FSelect>(bool_expr(e->operands[0]), float_expr(e->operands[1]),
                                       float_expr(e->operands[2]));
    case ExprKind::Cast: {
      FP x = float_expr(e->operands[0]);
      switch (e->type) {
      case DType::F32: return fun(std::move(x), round_to_f32);
      case DType::F16: return fun(std::move(x), round_to_f16);
      case DType::BF16: return fun(std::move(x), round_to_bf16);
      default: return x;
      }
    }
    case ExprKind::Call: return float_call(e);
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown expression kind");
  }

  FP float_call(const Expr& e) {
    const auto& args = e->operands;
    auto a0 = [&] { return float_expr(args[0]); };
    switch (e->math_fn) {
    case MathFn::Exp: return fun(a0(), [](double x) { return std::exp(x); });
    case MathFn::Log: return fun(a0(), [](double x) { return std::log(x); });
    case MathFn::Sqrt: return fun(a0(), [](double x) { return std::sqrt(x); });
    case MathFn::Rsqrt: return fun(a0(), [](double x) { return 1.0 / std::sqrt(x); });
    case MathFn::Tanh: return fun(a0(), [](double x) { return std::tanh(x); });
    case MathFn::Erf: return fun(a0(), [](double x) { return std::erf(x); });
    case MathFn::Sigmoid: return fun(a0(), [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    case MathFn::Abs: return fun(a0(), [](double x) { return std::fabs(x); });
    case MathFn::Sin: return fun(a0(), [](double x) { return std::sin(x); });
    case MathFn::Cos: return fun(a0(), [](double x) { return std::cos(x); });
    case MathFn::Floor: return fun(a0(), [](double x) { return std::floor(x); });
    case MathFn::Ceil: return fun(a0(), [](double x) { return std::ceil(x); });
    case MathFn::Round: return fun(a0(), [](double x) { return std::nearbyint(x); });
    case MathFn::Exp2: return fun(a0(), [](double x) { return std::exp2(x); });
    case MathFn::Log2: return fun(a0(), [](double x) { return std::log2(x); });
    case MathFn::Log1p: return fun(a0(), [](double x) { return std::log1p(x); });
    case MathFn::Expm1: return fun(a0(), [](double x) { return std::expm1(x); });
    case MathFn::Tan: return fun(a0(), [](double x) { return std::tan(x); });
    case MathFn::Asin: return fun(a0(), [](double x) { return std::asin(x); });
    case MathFn::Acos: return fun(a0(), [](double x) { return std::acos(x); });
    case MathFn::Atan: return fun(a0(), [](double x) { return std::atan(x); });
    case MathFn::Sinh: return fun(a0(), [](double x) { return std::sinh(x); });
    case MathFn::Cosh: return fun(a0(), [](double x) { return std::cosh(x); });
    case MathFn::Asinh: return fun(a0(), [](double x) { return std::asinh(x); });
    case MathFn::Acosh: return fun(a0(), [](double x) { return std::acosh(x); });
    case MathFn::Atanh: return fun(a0(), [](double x) { return std::atanh(x); });
    case MathFn::Sign: return fun(a0(), float_sign);
    case MathFn::Trunc: return fun(a0(), [](double x) { return std::trunc(x); });
    case MathFn::Pow: return fbin(a0(), float_expr(args[1]), [](double x, double y) { return std::pow(x, y); });
    case MathFn::Atan2: return fbin(a0(), float_expr(args[1]), [](double x, double y) { return std::atan2(x, y); });
    case MathFn::Min: return fbin(a0(), float_expr(args[1]), nan_min);
    case MathFn::Max: return fbin(a0(), float_expr(args[1]), nan_max);
    case MathFn::Fma: {
      auto f = [](double x, double y, double z) { return std::fma(x, y, z); };
      return std::make_unique<FTer<decltype(f)>>(a0(), float_expr(args[1]), float_expr(args[2]), f);
    }
    case MathFn::IsNan:
    case MathFn::IsInf: return std::make_unique<FFromI>(int_call(e));
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown math function");
  }

  // ---- statements ----

  template <Storage S> SP store_node(const Stmt& s, DType dtype) {
    auto n = std::make_unique<SStore<S>>();
    n->at = place(s->buffer, s->indices);
    count_ops(s->value, n->ops);
    n->ops.dependent = !in_vector_loop_ && reads_element(s->value, s->buffer, s->indices);
    if constexpr (Cell<S>::is_float) {
      n->value = float_expr(s->value);
    } else if constexpr (S == Storage::Bool) {
      n->value = bool_expr(s->value);
    } else if constexpr (S == Storage::AllocI) {
      n->value = dtype == DType::Bool ? bool_expr(s->value) : wrap_node(dtype, int_expr(s->value));
    } else {
      n->value = int_expr(s->value);
    }
    return n;
  }

  SP store(const Stmt& s) {
    const BufInfo& b = buffer(s->buffer);
    switch (b.storage) {
#define UT_SIM_STORE(S) \
  case Storage::S: return store_node<Storage::S>(s, b.dtype);
      UT_SIM_STORE(F16) UT_SIM_STORE(BF16) UT_SIM_STORE(F32) UT_SIM_STORE(F64)
      UT_SIM_STORE(I8) UT_SIM_STORE(I16) UT_SIM_STORE(I32) UT_SIM_STORE(I64)
      UT_SIM_STORE(U8) UT_SIM_STORE(Bool) UT_SIM_STORE(AllocF) UT_SIM_STORE(AllocI)
#undef UT_SIM_STORE
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown storage");
  }

  SP matrix(const Stmt& s) {
    auto n = std::make_unique<SMatrix>();
    n->op = s->matrix_op;
    n->m = s->shape[0];
    n->n = s->shape[1];
    n->k = s->shape.size() > 2 ? s->shape[2] : 0;
    auto tile = [&](const std::string& name, const std::vector<Expr>& idx) {
      const BufInfo& b = buffer(name);
      if (!is_float(b.dtype)) unsupported(fmt::format("matrix tile in the integer buffer '{}'", name));
      SMatrix::Tile t;
      t.at = place(name, idx);
      t.storage = b.storage;
      t.row_stride = b.shape.back();
      return t;
    };
    n->target = tile(s->buffer, s->indices);
    if (s->matrix_op == MatrixOp::Store) {
      n->a = tile(s->value->name, s->value->operands);
    } else if (s->matrix_op != MatrixOp::Zero) {
      n->a = tile(s->value->operands[0]->name, s->value->operands[0]->operands);
      n->b = tile(s->value->operands[1]->name, s->value->operands[1]->operands);
      // The matrix unit's multiply-adds, charged as vector operations of the inputs' dtype
      // (the HCD's peak for f16/bf16 is the matrix unit's).
      n->ops.vector[static_cast<size_t>(s->value->operands[0]->type)] += 2.0 * static_cast<double>(n->m * n->n * n->k);
    }
    return n;
  }

  SP thread_nest(const Stmt& outer) {
    std::vector<const StmtNode*> loops{outer.get()};
    Stmt body = outer->body[0];
    while (body->kind == StmtKind::For && is_thread(body->for_kind)) {
      loops.push_back(body.get());
      body = body->body[0];
    }
    if (in_thread_loop_)
      unsupported(fmt::format("thread loop '{}' holds a barrier but is nested in another thread loop "
                              "without being perfectly nested in it", outer->var));
    if (loops.size() > 3) unsupported("more than three nested thread loops hold a barrier");
    auto n = std::make_unique<SThreadNest>();
    for (const StmtNode* l : loops) {
      // Bounds are evaluated once, before any thread variable of the nest is set.
      n->axes.push_back({0, int_expr(l->min), int_expr(l->extent)});
    }
    for (size_t k = 0; k < loops.size(); ++k) {
      int slot = out_.n_ivars++;
      n->axes[k].slot = slot;
      vars_.push_back({loops[k]->var, {false, slot}});
    }
    in_thread_loop_ = true;
    std::vector<Stmt> top = body->kind == StmtKind::Block ? body->body : std::vector<Stmt>{body};
    std::vector<Stmt> segment;
    auto flush = [&] {
      auto blk = std::make_unique<SBlock>();
      for (const Stmt& st : segment) {
        if (contains_barrier(st))
          unsupported(fmt::format("a barrier inside thread loop '{}' is not at the top level of its body",
                                  loops.back()->var));
        blk->body.push_back(stmt(st));
      }
      n->segments.push_back(std::move(blk));
      segment.clear();
    };
    for (const Stmt& st : top) {
      if (st->kind == StmtKind::Barrier)
        flush();
      else
        segment.push_back(st);
    }
    flush();
    in_thread_loop_ = false;
    vars_.resize(vars_.size() - loops.size());
    return n;
  }

  SP for_stmt(const Stmt& s) {
    if (is_thread(s->for_kind) && contains_barrier(s->body[0])) return thread_nest(s);
    if (is_parallel(s->for_kind)) return parallel_nest(s);
    auto n = std::make_unique<SFor>();
    n->min = int_expr(s->min);
    n->extent = int_expr(s->extent);
    n->vectorized = s->for_kind == ForKind::Vectorized || is_thread(s->for_kind);
    n->slot = out_.n_ivars++;
    vars_.push_back({s->var, {false, n->slot}});
    bool was_in_thread = in_thread_loop_;
    in_thread_loop_ |= is_thread(s->for_kind);
    n->body = stmt(s->body[0]);
    in_thread_loop_ = was_in_thread;
    vars_.pop_back();
    return n;
  }

  SP stmt(const Stmt& s) {
    switch (s->kind) {
    case StmtKind::For: {
      bool was_in_vector = in_vector_loop_;
      in_vector_loop_ |= is_thread(s->for_kind) || s->for_kind == ForKind::Vectorized;
      SP n = for_stmt(s);
      in_vector_loop_ = was_in_vector;
      return n;
    }
    case StmtKind::If: {
      auto n = std::make_unique<SIf>();
      n->cond = bool_expr(s->cond);
      n->then_case = stmt(s->body[0]);
      if (s->body.size() > 1) n->else_case = stmt(s->body[1]);
      return n;
    }
    case StmtKind::Store: return store(s);
    case StmtKind::Allocate: {
      if (s->shape.size() > static_cast<size_t>(kMaxRank))
        unsupported(fmt::format("allocation '{}' has {} dimensions; the sim supports up to {}",
                                s->buffer, s->shape.size(), kMaxRank));
      auto n = std::make_unique<SAllocate>();
      n->is_float = is_float(s->dtype);
      n->index = n->is_float ? out_.n_falloc++ : out_.n_ialloc++;
      n->slot = out_.n_bufs++;
      n->elems = element_count(s->buffer, s->shape);
      out_.slots.push_back({s->buffer, s->dtype, s->scope, static_cast<int64_t>(n->elems)});
      buffers_.push_back({s->buffer, {n->slot, n->is_float ? Storage::AllocF : Storage::AllocI, s->dtype, s->shape}});
      n->body = stmt(s->body[0]);
      buffers_.pop_back();
      return n;
    }
    case StmtKind::Let: {
      bool fl = is_float(s->value->type);
      int slot = fl ? out_.n_fvars++ : out_.n_ivars++;
      SP body;
      if (fl) {
        auto n = std::make_unique<SLetF>();
        n->slot = slot;
        n->value = float_expr(s->value);
        count_ops(s->value, n->ops);
        vars_.push_back({s->var, {true, slot}});
        n->body = stmt(s->body[0]);
        vars_.pop_back();
        return n;
      }
      auto n = std::make_unique<SLetI>();
      n->slot = slot;
      n->value = int_expr(s->value);
      vars_.push_back({s->var, {false, slot}});
      n->body = stmt(s->body[0]);
      vars_.pop_back();
      return n;
    }
    case StmtKind::Block: {
      auto n = std::make_unique<SBlock>();
      for (const Stmt& b : s->body) n->body.push_back(stmt(b));
      return n;
    }
    case StmtKind::Barrier:
      // Outside thread loops every "thread" is this one sequential walk: nothing to wait for.
      return std::make_unique<SNop>();
    case StmtKind::Prefetch:
      // A hint about caches: nothing for the interpreter to do.
      return std::make_unique<SNop>();
    case StmtKind::Matrix: return matrix(s);
    }
    internal_fail(__FILE__, __LINE__, "sim: unknown statement kind");
  }
};

} // namespace

SimKernel::SimKernel(LoopProgram program, const std::string& entry) : program_(std::move(program)) {
  for (const LoopFunc& f : program_.funcs)
    if (f.name == entry) func_ = &f;
  if (!func_) {
    std::string names;
    for (const LoopFunc& f : program_.funcs) names += (names.empty() ? "" : ", ") + f.name;
    throw ArgumentError(fmt::format("sim: kernel '{}' has no func '{}' (it has: {})", program_.kernel,
                                    entry, names.empty() ? "none" : names));
  }
  verify(program_);
  dims_ = unitile::launch_dims(*func_);
  compiled_ = std::make_unique<Compiled>();
  Preparer(program_, *func_, *compiled_);
}

SimKernel::~SimKernel() = default;

const std::vector<SlotInfo>& SimKernel::slots() const { return compiled_->slots; }

bool OpRecord::empty() const {
  for (size_t i = 0; i < scalar.size(); ++i)
    if (scalar[i] != 0 || vector[i] != 0) return false;
  return math_calls == 0 && !dependent;
}

void SimKernel::run(const std::vector<BufferArg>& buffers, const std::vector<ParamArg>& params,
                    Tracer* trace) const {
  const Compiled& k = *compiled_;
  if (buffers.size() != program_.buffers.size() || params.size() != program_.params.size())
    throw ArgumentError(fmt::format("{}: expected {} buffers and {} params, got {} and {}", k.where,
                                    program_.buffers.size(), program_.params.size(), buffers.size(),
                                    params.size()));
  std::vector<char*> bufs(static_cast<size_t>(k.n_bufs), nullptr);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const LoopBuffer& b = program_.buffers[i];
    if (k.buffer_bytes[i] > 0 && !buffers[i].data)
      throw ArgumentError(fmt::format("{}: buffer '{}' is null", k.where, b.name));
    if (buffers[i].bytes < k.buffer_bytes[i])
      throw ArgumentError(fmt::format("{}: buffer '{}' ({}{}) needs {} bytes but the one passed has {}",
                                      k.where, b.name, dtype_name(b.dtype),
                                      fmt::format("[{}]", fmt::join(b.shape, ", ")), k.buffer_bytes[i],
                                      buffers[i].bytes));
    bufs[i] = static_cast<char*>(buffers[i].data);
  }
  std::vector<int64_t> iv(static_cast<size_t>(k.n_ivars), 0);
  std::vector<double> fv(static_cast<size_t>(k.n_fvars), 0.0);
  for (size_t i = 0; i < params.size(); ++i) {
    DType t = program_.params[i].dtype;
    auto [fl, slot] = k.param_slots[i];
    const ParamArg& a = params[i];
    if (fl)
      fv[static_cast<size_t>(slot)] = round_to(t, a.is_float ? a.f : static_cast<double>(a.i));
    else
      iv[static_cast<size_t>(slot)] = wrap_to(t, a.is_float ? float_to_int(a.f) : a.i);
  }
  std::vector<std::vector<double>> falloc(static_cast<size_t>(k.n_falloc));
  std::vector<std::vector<int64_t>> ialloc(static_cast<size_t>(k.n_ialloc));
  Ctx c;
  c.iv = iv.data();
  c.fv = fv.data();
  c.buf = bufs.data();
  c.falloc = &falloc;
  c.ialloc = &ialloc;
  c.where = &k.where;
  c.trace = trace;
  k.body->exec(c);
}

} // namespace unitile::sim
