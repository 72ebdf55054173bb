// The Loop IR text parser: the inverse of LoopPrinter.cpp, with FILE:LINE:COL errors.
//
// Types are not written in the text; they are rebuilt the way Loop IR builders set
// them: loop variables are i64, a let variable has its value's type, a param its
// declared dtype, an access its buffer's (or allocation's) dtype, and literals carry an
// explicit dtype suffix unless they have the default one (i64 for `7`, f32 for `0.5`;
// see LoopPrinter.cpp). Everything else comes from the Expr factories, which is why
// parse(print(p)) is structurally equal to p.
//
// Comments run from `#` to the end of the line (`//` is floor division).
#include "ir/Parser.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace unitile {

namespace {

enum class Tok : uint8_t { Ident, Number, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;   // for a Number, the digits without the suffix
  std::string suffix; // a Number's dtype suffix (`i32` in `7i32`), else empty
  SourceLoc loc;
};

// Longest punctuators first so that `//` wins over `/`, `??` over `?`, `..` over `.`.
constexpr std::string_view kPuncts[] = {"//", "==", "!=", "<=", ">=", "&&", "||", "??", "..", "<<", ">>", "&", "|", "^", "~",
                                        "{",  "}",  "[",  "]",  "(",  ")",  ",",  ":",  "=",
                                        "<",  ">",  "+",  "-",  "*",  "/",  "%",  "!",  "?",
                                        "."};

std::vector<Token> lex(const SourceFile& src) {
  std::vector<Token> toks;
  const std::string& t = src.text;
  size_t i = 0;
  int line = 1, col = 1;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < t.size(); ++k, ++i) {
      if (t[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  auto is_ident_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  while (i < t.size()) {
    char c = t[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(1);
      continue;
    }
    if (c == '#') {
      while (i < t.size() && t[i] != '\n') advance(1);
      continue;
    }
    Token tok;
    tok.loc = {line, col};
    size_t start = i;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      // digits [. digits] [e [+-] digits] [dtype suffix]; `0..4` is 0, `..`, 4.
      size_t j = i;
      while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
      if (j + 1 < t.size() && t[j] == '.' && std::isdigit(static_cast<unsigned char>(t[j + 1]))) {
        ++j;
        while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
      }
      if (j < t.size() && (t[j] == 'e' || t[j] == 'E')) {
        size_t k = j + 1;
        if (k < t.size() && (t[k] == '+' || t[k] == '-')) ++k;
        if (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) {
          j = k;
          while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
        }
      }
      size_t digits_end = j;
      while (j < t.size() && is_ident_char(t[j])) ++j; // the dtype suffix, checked later
      tok.kind = Tok::Number;
      tok.text = t.substr(start, digits_end - start);
      tok.suffix = t.substr(digits_end, j - digits_end);
      advance(j - start);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < t.size() && is_ident_char(t[j])) ++j;
      tok.kind = Tok::Ident;
      tok.text = t.substr(start, j - start);
      advance(j - start);
    } else {
      for (std::string_view p : kPuncts) {
        if (t.compare(i, p.size(), p) == 0) {
          tok.kind = Tok::Punct;
          tok.text = std::string(p);
          break;
        }
      }
      if (tok.kind != Tok::Punct) {
        std::string shown = std::isprint(static_cast<unsigned char>(c))
                                ? std::string(1, c)
                                : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        throw UserError(make_diagnostic(src, tok.loc,
                                        fmt::format("unexpected character '{}'", shown)));
      }
      advance(tok.text.size());
    }
    toks.push_back(std::move(tok));
  }
  Token end;
  end.kind = Tok::End;
  end.loc = {line, col};
  toks.push_back(end);
  return toks;
}

// `inf`, `nan` with an optional dtype suffix (`inff64`): the float literals spelled as
// names. Returns the dtype, or nothing when `name` is an ordinary identifier.
std::optional<DType> special_float_literal(std::string_view name, double* value) {
  std::string_view rest;
  if (name.starts_with("inf")) {
    *value = std::numeric_limits<double>::infinity();
    rest = name.substr(3);
  } else if (name.starts_with("nan")) {
    *value = std::numeric_limits<double>::quiet_NaN();
    rest = name.substr(3);
  } else {
    return std::nullopt;
  }
  if (rest.empty()) return DType::F32;
  std::optional<DType> t = parse_dtype(rest);
  if (t && dtype_name(*t) == rest) return t;
  return std::nullopt;
}

class LoopParser {
public:
  explicit LoopParser(const SourceFile& src) : src_(src), toks_(lex(src)) {}

  LoopProgram parse_program() {
    LoopProgram p;
    expect_keyword("program");
    p.kernel = expect_ident("a program name");
    expect("{");
    std::set<std::string> func_names;
    while (!at("}")) {
      const Token& t = peek();
      if (at_keyword("buffer")) {
        p.buffers.push_back(parse_buffer());
      } else if (at_keyword("param")) {
        p.params.push_back(parse_param());
      } else if (at_keyword("func")) {
        next();
        Token name = peek();
        LoopFunc f;
        f.name = expect_ident("a func name");
        if (!func_names.insert(f.name).second)
          fail(name, fmt::format("func '{}' is defined twice", f.name));
        f.body = parse_body();
        p.funcs.push_back(std::move(f));
      } else {
        fail(t, fmt::format("expected 'buffer', 'param', 'func' or '}}', got {}", describe(t)));
      }
    }
    expect("}");
    if (peek().kind != Tok::End)
      fail(peek(), fmt::format("expected the end of the file after the program, got {}",
                               describe(peek())));
    return p;
  }

private:
  struct VarInfo {
    DType type;
  };
  struct BufferInfo {
    DType dtype;
    size_t rank;
  };

  const SourceFile& src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::map<std::string, BufferInfo> globals_;
  std::map<std::string, DType> params_;
  // Innermost last: loop and let variables, allocations.
  std::vector<std::pair<std::string, VarInfo>> vars_;
  std::vector<std::pair<std::string, BufferInfo>> allocs_;

  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool at(std::string_view punct) const {
    return peek().kind == Tok::Punct && peek().text == punct;
  }
  bool at_keyword(std::string_view kw) const {
    return peek().kind == Tok::Ident && peek().text == kw;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
    case Tok::End: return "the end of the file";
    case Tok::Ident: return "'" + t.text + "'";
    case Tok::Number: return "number '" + t.text + t.suffix + "'";
    case Tok::Punct: return "'" + t.text + "'";
    }
    return "?";
  }
  [[noreturn]] void fail(const Token& t, std::string msg, std::string hint = {}) const {
    int len = t.kind == Tok::End ? 1 : static_cast<int>(t.text.size() + t.suffix.size());
    throw UserError(make_diagnostic(src_, t.loc, std::move(msg), std::move(hint), len));
  }
  void expect(std::string_view punct) {
    if (!at(punct)) fail(peek(), fmt::format("expected '{}', got {}", punct, describe(peek())));
    next();
  }
  void expect_keyword(std::string_view kw) {
    if (!at_keyword(kw)) fail(peek(), fmt::format("expected '{}', got {}", kw, describe(peek())));
    next();
  }
  std::string expect_ident(std::string_view what) {
    if (peek().kind != Tok::Ident) fail(peek(), fmt::format("expected {}, got {}", what, describe(peek())));
    return next().text;
  }
  DType expect_dtype() {
    const Token& t = peek();
    if (t.kind == Tok::Ident) {
      if (auto d = parse_dtype(t.text)) {
        next();
        return *d;
      }
    }
    fail(t, fmt::format("expected a dtype, got {}", describe(t)),
         "dtypes are f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool");
  }
  int64_t expect_int(std::string_view what) {
    const Token& t = peek();
    bool negative = false;
    if (at("-")) {
      negative = true;
      next();
    }
    const Token& n = peek();
    int64_t v = 0;
    std::string digits = (negative ? "-" : "") + n.text;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (n.kind != Tok::Number || !n.suffix.empty() || ec != std::errc() || ptr != digits.data() + digits.size())
      fail(n.kind == Tok::Number ? n : t, fmt::format("expected {}, got {}", what, describe(n)));
    next();
    return v;
  }

  // ---- declarations ----
  std::vector<int64_t> parse_shape() {
    expect("[");
    std::vector<int64_t> shape;
    while (!at("]")) {
      const Token& t = peek();
      int64_t d = expect_int("a dimension (an integer)");
      if (d < 0) fail(t, fmt::format("a dimension must not be negative, got {}", d));
      shape.push_back(d);
      if (!at("]")) expect(",");
    }
    expect("]");
    return shape;
  }

  void check_new_name(const Token& t) const {
    if (globals_.count(t.text) || params_.count(t.text))
      fail(t, fmt::format("'{}' is already declared", t.text));
    double unused;
    if (special_float_literal(t.text, &unused) || parse_dtype(t.text) || parse_math_fn(t.text) ||
        t.text == "true" || t.text == "false")
      fail(t, fmt::format("'{}' is a reserved word and cannot name a buffer or variable", t.text));
  }

  LoopBuffer parse_buffer() {
    expect_keyword("buffer");
    const Token& name = peek();
    LoopBuffer b;
    b.name = expect_ident("a buffer name");
    check_new_name(name);
    expect(":");
    b.dtype = expect_dtype();
    b.shape = parse_shape();
    const Token& role = peek();
    std::string r = expect_ident("a buffer role (input, output, local)");
    if (r == "input")
      b.role = TensorRole::Input;
    else if (r == "output")
      b.role = TensorRole::Output;
    else if (r == "local")
      b.role = TensorRole::Local;
    else
      fail(role, fmt::format("unknown buffer role '{}'", r), "roles are input, output, local");
    if (at_keyword("stream")) {
      if (b.role != TensorRole::Output)
        fail(peek(), "only an output buffer is written with streaming stores");
      next();
      b.stream = true;
    }
    globals_[b.name] = {b.dtype, b.shape.size()};
    return b;
  }

  ParamDecl parse_param() {
    expect_keyword("param");
    ParamDecl d;
    const Token& name = peek();
    d.loc = name.loc;
    d.name = expect_ident("a param name");
    check_new_name(name);
    expect(":");
    d.dtype = expect_dtype();
    params_[d.name] = d.dtype;
    return d;
  }

  // ---- statements ----
  // RAII depth guard so that no input can overflow the stack.
  struct Nest {
    LoopParser& p;
    Nest(LoopParser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > 256) p.fail(at, "nesting is too deep (more than 256 levels)");
    }
    ~Nest() { --p.depth_; }
  };

  std::vector<Stmt> parse_list() {
    expect("{");
    std::vector<Stmt> stmts;
    while (!at("}")) {
      if (peek().kind == Tok::End) fail(peek(), "expected '}' before the end of the file");
      stmts.push_back(parse_stmt());
    }
    expect("}");
    return stmts;
  }

  Stmt make_block(std::vector<Stmt> stmts) {
    auto n = std::make_shared<StmtNode>();
    n->kind = StmtKind::Block;
    n->body = std::move(stmts);
    return n;
  }

  // A body: one statement is itself, anything else a Block.
  Stmt parse_body() {
    Nest nest(*this, peek());
    std::vector<Stmt> stmts = parse_list();
    if (stmts.size() == 1) return stmts[0];
    return make_block(std::move(stmts));
  }

  void check_unbound(const Token& t) const {
    check_new_name(t);
    for (const auto& [n, _] : vars_)
      if (n == t.text) fail(t, fmt::format("'{}' is already bound in this scope", t.text),
                            "Loop IR names are never shadowed: pick a fresh name");
    for (const auto& [n, _] : allocs_)
      if (n == t.text) fail(t, fmt::format("'{}' already names an allocation in this scope", t.text));
  }

  Stmt parse_stmt() {
    const Token& t = peek();
    Nest nest(*this, t);
    if (at("{")) return make_block(parse_list());
    if (t.kind != Tok::Ident) fail(t, fmt::format("expected a statement, got {}", describe(t)));
    if (t.text == "for") return parse_for();
    if (t.text == "if") {
      next();
      Expr cond = parse_expr();
      Stmt then_case = parse_body();
      Stmt else_case;
      if (at_keyword("else")) {
        next();
        else_case = parse_body();
      }
      return if_then(std::move(cond), std::move(then_case), std::move(else_case));
    }
    if (t.text == "let") {
      next();
      const Token& name = peek();
      std::string v = expect_ident("a variable name");
      check_unbound(name);
      expect("=");
      Expr value = parse_expr();
      vars_.push_back({v, {value->type}});
      Stmt body = parse_body();
      vars_.pop_back();
      return let_stmt(std::move(v), std::move(value), std::move(body));
    }
    if (t.text == "allocate") {
      next();
      const Token& name = peek();
      std::string b = expect_ident("an allocation name");
      check_unbound(name);
      expect(":");
      DType dt = expect_dtype();
      std::vector<int64_t> shape = parse_shape();
      const Token& st = peek();
      std::string s = expect_ident("a memory scope (global, shared, local, register)");
      MemScope scope;
      if (s == "global")
        scope = MemScope::Global;
      else if (s == "shared")
        scope = MemScope::Shared;
      else if (s == "local")
        scope = MemScope::Local;
      else if (s == "register")
        scope = MemScope::Register;
      else
        fail(st, fmt::format("unknown memory scope '{}'", s),
             "scopes are global, shared, local, register");
      allocs_.push_back({b, {dt, shape.size()}});
      Stmt body = parse_body();
      allocs_.pop_back();
      return allocate(std::move(b), dt, std::move(shape), scope, std::move(body));
    }
    if (t.text == "barrier") {
      next();
      return barrier();
    }
    // `prefetch NAME[indices] [rows N] [level L]`; a buffer named prefetch is still stored to as
    // prefetch[..].
    if (t.text == "prefetch" && peek(1).text != "[") {
      next();
      const Token& name = next();
      const BufferInfo* buf = find_buffer(name.text);
      if (!buf) fail(name, fmt::format("prefetch of unknown buffer '{}'", name.text));
      std::vector<Expr> idx = parse_indices(name, *buf);
      int64_t rows = 1;
      if (at_keyword("rows")) {
        next();
        rows = expect_int("the number of rows to prefetch (an integer)");
      }
      int64_t level = 1;
      if (at_keyword("level")) {
        const Token kw = next();
        level = expect_int("the cache level to prefetch into (1 or 2)");
        if (level != 1 && level != 2) fail(kw, fmt::format("a prefetch fills cache level 1 or 2, not {}", level));
      }
      return prefetch(name.text, std::move(idx), rows, static_cast<int>(level));
    }
    // `matrix_OP(m, n[, k]) TARGET[origin] ...`; a buffer of that name is still stored to
    // as NAME[..].
    if (peek(1).text == "(" && (t.text == "matrix_zero" || t.text == "matrix_mma" ||
                                t.text == "matrix_mma_tf32" || t.text == "matrix_mma_pairs" ||
                                t.text == "matrix_store"))
      return parse_matrix();
    // A store: NAME[indices] = value.
    const Token& name = next();
    const BufferInfo* buf = find_buffer(name.text);
    if (!buf) {
      if (!at("["))
        fail(name, fmt::format("expected a statement, got '{}'", name.text),
             "statements are for, if, let, allocate, barrier, prefetch and stores `B[i] = value`");
      fail(name, fmt::format("store to unknown buffer '{}'", name.text));
    }
    std::vector<Expr> idx = parse_indices(name, *buf);
    expect("=");
    Expr value = parse_expr();
    return store(name.text, std::move(idx), std::move(value));
  }

  Stmt parse_matrix() {
    const Token& op_tok = next();
    const std::string op = op_tok.text;
    const bool mma = op == "matrix_mma" || op == "matrix_mma_tf32" || op == "matrix_mma_pairs";
    expect("(");
    std::vector<int64_t> shape;
    for (size_t n = 0; n < (mma ? 3u : 2u); ++n) {
      if (n) expect(",");
      shape.push_back(expect_int(n == 0 ? "the unit's m" : n == 1 ? "the unit's n" : "the unit's k"));
      if (shape.back() < 1) fail(op_tok, fmt::format("{}: unit dimensions must be positive", op));
    }
    expect(")");
    const Token& name = next();
    const BufferInfo* buf = find_buffer(name.text);
    if (!buf) fail(name, fmt::format("{} of unknown buffer '{}'", op, name.text));
    std::vector<Expr> idx = parse_indices(name, *buf);
    auto tile_access = [&](const Expr& e, const char* what) {
      if (e->kind != ExprKind::Access)
        fail(name, fmt::format("{}: expected {} as an access NAME[origin], got {}", op, what, to_string(e)));
    };
    if (op == "matrix_zero") return matrix_zero(name.text, std::move(idx), shape[0], shape[1]);
    if (op == "matrix_store") {
      expect("=");
      Expr acc = parse_expr();
      tile_access(acc, "the accumulator tile");
      return matrix_store(name.text, std::move(idx), acc, shape[0], shape[1]);
    }
    expect("+"); // `+=` lexes as two puncts here
    expect("=");
    Expr product = parse_expr();
    if (product->kind != ExprKind::Binary || product->binary_op != BinaryOp::Mul)
      fail(name, fmt::format("{}: expected `A[origin] * B[origin]` after '+='", op));
    tile_access(product->operands[0], "the A tile");
    tile_access(product->operands[1], "the B tile");
    if (op == "matrix_mma_pairs")
      return matrix_mma_pairs(name.text, std::move(idx), product->operands[0], product->operands[1], shape[0],
                              shape[1], shape[2]);
    return matrix_mma(name.text, std::move(idx), product->operands[0], product->operands[1], shape[0], shape[1],
                      shape[2], op == "matrix_mma_tf32");
  }

  Stmt parse_for() {
    next(); // for
    const Token& name = peek();
    std::string v = expect_ident("a loop variable");
    check_unbound(name);
    expect_keyword("in");
    Expr min, extent;
    // `LO..HI` with integer constants, or `MIN extent EXTENT`.
    Expr first = parse_expr();
    if (at("..")) {
      const Token& dots = next();
      const Token& hi_tok = peek();
      int64_t hi = expect_int("the loop's upper bound (an integer)");
      if (first->kind != ExprKind::IntImm || first->type != DType::I64)
        fail(dots, "'LO..HI' needs integer constants; write 'MIN extent EXTENT' otherwise");
      int64_t lo = first->int_value;
      if (hi < lo) fail(hi_tok, fmt::format("the loop's upper bound {} is below its lower bound {}", hi, lo));
      min = int_imm(lo);
      extent = int_imm(hi - lo);
    } else if (at_keyword("extent")) {
      next();
      min = std::move(first);
      extent = parse_expr();
    } else {
      fail(peek(), fmt::format("expected '..' or 'extent' after the loop's start, got {}",
                               describe(peek())),
           "loops are `for i in 0..64 { }` or `for i in MIN extent EXTENT { }`");
    }
    ForKind kind = ForKind::Serial;
    if (peek().kind == Tok::Ident && !at_keyword("unroll")) kind = parse_for_kind();
    int64_t unroll_by = 0;
    if (at_keyword("unroll")) { // a serial loop's unroll hint: `for k in 0..256 unroll 4 { }`
      const Token& u = next();
      unroll_by = expect_int("the unroll factor (an integer)");
      if (unroll_by < 2 || kind != ForKind::Serial)
        fail(u, "'unroll N' needs a serial loop and a factor of at least 2");
    }
    vars_.push_back({v, {DType::I64}});
    Stmt body = parse_body();
    vars_.pop_back();
    Stmt loop = for_loop(std::move(v), std::move(min), std::move(extent), kind, std::move(body));
    if (unroll_by == 0) return loop;
    auto hinted = std::make_shared<StmtNode>(*loop);
    hinted->unroll_by = unroll_by;
    return hinted;
  }

  ForKind parse_for_kind() {
    const Token& t = next();
    std::string k = t.text;
    if (k == "grid" || k == "thread") {
      expect(".");
      k += "." + expect_ident("an axis (x, y, z)");
    }
    static constexpr ForKind kinds[] = {
        ForKind::Serial, ForKind::Parallel, ForKind::Vectorized, ForKind::Unrolled,
        ForKind::GridX,  ForKind::GridY,    ForKind::GridZ,      ForKind::ThreadX,
        ForKind::ThreadY, ForKind::ThreadZ};
    for (ForKind f : kinds)
      if (k == for_kind_name(f)) return f;
    fail(t, fmt::format("unknown loop kind '{}'", k),
         "kinds are serial, parallel, vectorized, unrolled, grid.x/y/z, thread.x/y/z");
  }

  // ---- expressions ----
  const BufferInfo* find_buffer(const std::string& name) const {
    for (auto it = allocs_.rbegin(); it != allocs_.rend(); ++it)
      if (it->first == name) return &it->second;
    auto g = globals_.find(name);
    return g == globals_.end() ? nullptr : &g->second;
  }

  std::vector<Expr> parse_indices(const Token& name, const BufferInfo& buf) {
    expect("[");
    std::vector<Expr> idx;
    while (!at("]")) {
      idx.push_back(parse_expr());
      if (!at("]")) expect(",");
    }
    expect("]");
    if (idx.size() != buf.rank)
      fail(name, fmt::format("'{}' has rank {} but is indexed with {} {}", name.text, buf.rank,
                             idx.size(), idx.size() == 1 ? "index" : "indices"));
    return idx;
  }

  Expr parse_expr() {
    Nest nest(*this, peek());
    Expr c = parse_binary(2);
    if (!at("?")) return c;
    const Token& q = next();
    Expr a = parse_expr();
    expect(":");
    Expr b = parse_expr();
    return select(std::move(c), std::move(a), std::move(b), q.loc);
  }

  static int binary_precedence(const Token& t, BinaryOp* op) {
    if (t.kind != Tok::Punct) return -1;
    static const std::pair<std::string_view, std::pair<BinaryOp, int>> table[] = {
        // C's levels, as in the Kernel IR parser.
        {"||", {BinaryOp::Or, 2}},  {"&&", {BinaryOp::And, 3}}, {"|", {BinaryOp::BitOr, 4}},
        {"^", {BinaryOp::BitXor, 5}}, {"&", {BinaryOp::BitAnd, 6}}, {"==", {BinaryOp::Eq, 7}},
        {"!=", {BinaryOp::Ne, 7}},  {"<", {BinaryOp::Lt, 8}},   {"<=", {BinaryOp::Le, 8}},
        {">", {BinaryOp::Gt, 8}},   {">=", {BinaryOp::Ge, 8}},  {"<<", {BinaryOp::Shl, 9}},
        {">>", {BinaryOp::Shr, 9}}, {"+", {BinaryOp::Add, 10}}, {"-", {BinaryOp::Sub, 10}},
        {"*", {BinaryOp::Mul, 11}}, {"/", {BinaryOp::Div, 11}},
        {"//", {BinaryOp::FloorDiv, 11}}, {"%", {BinaryOp::Mod, 11}},
    };
    for (const auto& [tok, info] : table)
      if (t.text == tok) {
        *op = info.first;
        return info.second;
      }
    return -1;
  }

  // Precedence climbing over the left-associative binary levels.
  Expr parse_binary(int min_prec) {
    Expr lhs = parse_unary();
    for (;;) {
      BinaryOp op = BinaryOp::Add;
      int prec = binary_precedence(peek(), &op);
      if (prec < min_prec) return lhs;
      const Token& t = next();
      Nest nest(*this, t);
      Expr rhs = parse_binary(prec + 1);
      lhs = binary(op, std::move(lhs), std::move(rhs), t.loc);
    }
  }

  Expr parse_unary() {
    const Token& t = peek();
    Nest nest(*this, t);
    if (at("-")) {
      next();
      // `-` directly before a literal is part of the literal (see LoopPrinter.cpp).
      if (peek().kind == Tok::Number) return parse_number(next(), true, t);
      double v;
      if (peek().kind == Tok::Ident && special_float_literal(peek().text, &v))
        return parse_primary(true, t);
      return unary(UnaryOp::Neg, parse_unary(), t.loc);
    }
    if (at("!")) {
      next();
      return unary(UnaryOp::Not, parse_unary(), t.loc);
    }
    if (at("~")) {
      next();
      return unary(UnaryOp::BitNot, parse_unary(), t.loc);
    }
    return parse_primary(false, t);
  }

  Expr parse_number(const Token& t, bool negative, const Token& start) {
    std::string digits = (negative ? "-" : "") + t.text;
    bool is_float_text = t.text.find_first_of(".eE") != std::string::npos;
    DType type = is_float_text ? DType::F32 : DType::I64;
    if (!t.suffix.empty()) {
      auto d = parse_dtype(t.suffix);
      if (!d || dtype_name(*d) != t.suffix)
        fail(t, fmt::format("unknown literal suffix '{}' in '{}{}'", t.suffix, t.text, t.suffix),
             "a literal's dtype follows it directly: 7i32, 0.5f64, 1u8");
      type = *d;
    }
    SourceLoc loc = start.loc;
    if (is_float_text) {
      double v = 0;
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (ec != std::errc() || ptr != digits.data() + digits.size())
        fail(t, fmt::format("malformed number '{}'", t.text));
      return float_imm(v, type, loc);
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc::result_out_of_range)
      fail(t, fmt::format("integer literal '{}' does not fit in 64 bits", digits));
    if (ec != std::errc() || ptr != digits.data() + digits.size())
      fail(t, fmt::format("malformed number '{}'", t.text));
    return int_imm(v, type, loc);
  }

  Expr parse_primary(bool negative, const Token& start) {
    const Token& t = next();
    if (t.kind == Tok::Number) return parse_number(t, false, t);
    if (t.kind == Tok::Punct && t.text == "(") {
      Expr e = parse_expr();
      expect(")");
      return e;
    }
    if (t.kind != Tok::Ident) fail(t, fmt::format("expected an expression, got {}", describe(t)));
    double fv = 0;
    if (auto ft = special_float_literal(t.text, &fv))
      return float_imm(negative ? -fv : fv, *ft, start.loc);
    if (t.text == "true" || t.text == "false") return bool_imm(t.text == "true", t.loc);
    if (at("(")) return parse_call(t);
    if (at("[")) {
      const BufferInfo* buf = find_buffer(t.text);
      if (!buf) fail(t, fmt::format("unknown buffer '{}'", t.text));
      std::vector<Expr> idx = parse_indices(t, *buf);
      Expr guard;
      if (at("??")) {
        next();
        guard = parse_unary();
      }
      return access(t.text, std::move(idx), buf->dtype, std::move(guard), t.loc);
    }
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == t.text) return var(t.text, it->second.type, t.loc);
    if (auto p = params_.find(t.text); p != params_.end()) return var(t.text, p->second, t.loc);
    if (find_buffer(t.text))
      fail(t, fmt::format("buffer '{}' is used without indices", t.text),
           "write B[] for a rank-0 buffer");
    fail(t, fmt::format("unknown variable '{}'", t.text));
  }

  Expr parse_call(const Token& name) {
    expect("(");
    std::vector<Expr> args;
    while (!at(")")) {
      args.push_back(parse_expr());
      if (!at(")")) expect(",");
    }
    expect(")");
    if (auto d = parse_dtype(name.text); d && dtype_name(*d) == name.text) {
      if (args.size() != 1)
        fail(name, fmt::format("a cast to {} takes one argument, got {}", name.text, args.size()));
      return cast(*d, std::move(args[0]), name.loc);
    }
    auto fn = parse_math_fn(name.text);
    if (!fn) fail(name, fmt::format("unknown function '{}'", name.text));
    if (static_cast<int>(args.size()) != math_fn_arity(*fn))
      fail(name, fmt::format("{} takes {} argument{}, got {}", name.text, math_fn_arity(*fn),
                             math_fn_arity(*fn) == 1 ? "" : "s", args.size()));
    return call(*fn, std::move(args), name.loc);
  }
};

} // namespace

LoopProgram parse_loop_program(const SourceFile& src) {
  LoopParser parser(src);
  return parser.parse_program();
}

} // namespace unitile
