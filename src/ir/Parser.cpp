// parse_module: the recursive-descent parser for Kernel IR text (.ut files).
//
// The parser only builds the syntax tree and checks what the grammar alone decides;
// names, ranks, types and index ranges are the verifier's job (Verifier.cpp), so that
// kernels from the C++ builder get exactly the same checks.
#include "ir/Lexer.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>

namespace unitile {

namespace {

// Nesting of brackets, calls and unary operators the parser recurses into, and depth of
// the expression tree it builds (left-associative chains grow the tree without
// recursion). Both bounds keep every later recursive pass far from the stack's limit.
constexpr int kMaxNesting = 256;
constexpr int kMaxTreeDepth = 1024;

const char* const kSectionHint = "sections are input:, output:, local:, param: and operation:";
const char* const kDTypeHint =
    "dtypes are f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool (and float, double, half, "
    "int, long)";

bool is_reserved(const std::string& s) {
  return s == "true" || s == "false" || s == "inf" || s == "nan";
}

std::string describe(const Token& t) {
  switch (t.kind) {
  case TokenKind::Ident: return fmt::format("identifier '{}'", t.text);
  case TokenKind::Int:
  case TokenKind::Float: return fmt::format("number '{}'", t.text);
  default: return token_kind_spelling(t.kind);
  }
}

int token_len(const Token& t) { return t.text.empty() ? 1 : static_cast<int>(t.text.size()); }

class ModuleParser {
public:
  explicit ModuleParser(const SourceFile& src) : src_(src), lexer_(src) {}

  Module parse() {
    Module m;
    std::map<std::string, SourceLoc> seen;
    for (;;) {
      skip_separators();
      const Token& t = peek();
      if (t.kind == TokenKind::End) break;
      if (t.kind != TokenKind::Ident || t.text != "kernel")
        fail(t, fmt::format("expected 'kernel', got {}", describe(t)),
             "a .ut file is a list of kernel NAME { ... } blocks");
      Kernel k = parse_kernel(seen);
      verify(k, src_);
      m.kernels.push_back(std::move(k));
    }
    return m;
  }

private:
  // ---- tokens ------------------------------------------------------------------------

  const Token& peek(size_t n = 0) {
    while (ahead_.size() <= n) ahead_.push_back(lexer_.next());
    return ahead_[n];
  }
  Token take() {
    peek();
    Token t = std::move(ahead_.front());
    ahead_.pop_front();
    return t;
  }
  bool at(TokenKind k) { return peek().kind == k; }
  bool at_ident(const char* word) { return peek().kind == TokenKind::Ident && peek().text == word; }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  void skip_newlines() {
    while (at(TokenKind::Newline)) take();
  }
  void skip_separators() {
    while (at(TokenKind::Newline) || at(TokenKind::Semicolon)) take();
  }

  [[noreturn]] void fail(SourceLoc loc, const std::string& msg, const std::string& hint = {},
                         int len = 1) {
    throw UserError(make_diagnostic(src_, loc, msg, hint, len));
  }
  [[noreturn]] void fail(const Token& t, const std::string& msg, const std::string& hint = {}) {
    fail(t.loc, msg, hint, token_len(t));
  }
  /// The error for an unexpected token: stray closing brackets and the end of the file
  /// inside a kernel get their own wording.
  [[noreturn]] void unexpected(const Token& t, const std::string& expected) {
    if (t.kind == TokenKind::RParen || t.kind == TokenKind::RBracket)
      fail(t, fmt::format("unbalanced {}: no matching opening bracket", describe(t)));
    if (t.kind == TokenKind::End && kernel_ != nullptr)
      fail(kernel_->loc, fmt::format("unterminated kernel '{}': missing '}}'", kernel_->name),
           "every kernel NAME { ... } needs its closing brace", 6);
    fail(t, fmt::format("expected {}, got {}", expected, describe(t)));
  }
  Token expect(TokenKind k, const std::string& what) {
    if (!at(k)) unexpected(peek(), what);
    return take();
  }
  Token expect_ident(const std::string& what) {
    if (!at(TokenKind::Ident)) unexpected(peek(), what);
    if (is_reserved(peek().text))
      fail(peek(), fmt::format("'{}' is a reserved word and cannot be used as {}", peek().text, what));
    return take();
  }
  /// The closing bracket of a pair, or an error that says where the pair opened.
  void expect_close(TokenKind close, const Token& open) {
    if (accept(close)) return;
    const Token& t = peek();
    if (t.kind == TokenKind::End && kernel_ != nullptr) unexpected(t, "");
    fail(t, fmt::format("expected {} to close the {} at {}:{}, got {}", token_kind_spelling(close),
                        token_kind_spelling(open.kind), open.loc.line, open.loc.col, describe(t)),
         "brackets must balance within a statement or declaration");
  }

  // ---- kernels and sections ------------------------------------------------------------

  Kernel parse_kernel(std::map<std::string, SourceLoc>& seen) {
    Token kw = take(); // `kernel`
    Token name = expect_ident("a kernel name");
    if (auto it = seen.find(name.text); it != seen.end())
      fail(name, fmt::format("duplicate kernel name '{}'", name.text),
           fmt::format("the first kernel '{}' is at line {}", name.text, it->second.line));
    seen[name.text] = name.loc;
    Kernel k;
    k.name = name.text;
    k.loc = kw.loc;
    kernel_ = &k;
    skip_newlines();
    expect(TokenKind::LBrace, fmt::format("'{{' after 'kernel {}'", k.name));

    bool have_operation = false;
    for (;;) {
      skip_separators();
      const Token& t = peek();
      if (t.kind == TokenKind::RBrace) break;
      if (t.kind == TokenKind::Ident && peek(1).kind == TokenKind::Colon) {
        parse_section(k, have_operation);
        continue;
      }
      if (t.kind == TokenKind::Ident && t.text == "kernel")
        fail(k.loc, fmt::format("unterminated kernel '{}': missing '}}' before the next kernel", k.name),
             "every kernel NAME { ... } needs its closing brace", 6);
      if (t.kind == TokenKind::Ident && peek(1).kind == TokenKind::LBracket && !have_operation)
        fail(t, "statement outside an 'operation:' section",
             "write the statements after 'operation:'");
      if (t.kind == TokenKind::End) unexpected(t, "");
      fail(t, fmt::format("expected a section such as 'input:', got {}", describe(t)), kSectionHint);
    }
    Token close = take(); // `}`
    if (!have_operation)
      fail(close, fmt::format("kernel '{}' has no 'operation:' section", k.name),
           "add 'operation:' followed by statements such as C[i] = A[i]");
    kernel_ = nullptr;

    skip_newlines();
    if (at_ident("schedule")) {
      Token sched = take();
      if (!at(TokenKind::LBrace)) unexpected(peek(), "'{' after 'schedule'");
      Token open = take();
      k.schedule_loc = SourceLoc{open.loc.line, open.loc.col + 1};
      k.schedule_file = src_.name;
      k.schedule_text = lexer_.read_braced_raw(sched.loc);
    }
    return k;
  }

  void parse_section(Kernel& k, bool& have_operation) {
    Token name = take();
    take(); // `:`
    const std::string& s = name.text;
    if (s == "operation") {
      if (have_operation)
        fail(name, "duplicate 'operation:' section", "a kernel has one operation: section");
      have_operation = true;
      parse_statements(k);
      return;
    }
    TensorRole role = TensorRole::Input;
    if (s == "input")
      role = TensorRole::Input;
    else if (s == "output")
      role = TensorRole::Output;
    else if (s == "local")
      role = TensorRole::Local;
    else if (s != "param")
      fail(name, fmt::format("unknown section '{}'", s), kSectionHint);

    skip_newlines();
    if (at(TokenKind::RBrace) || (at(TokenKind::Ident) && peek(1).kind == TokenKind::Colon))
      fail(name, fmt::format("empty '{}:' section", s), "list declarations such as f32[N] X, f32[N] Y");
    for (;;) {
      if (s == "param")
        parse_param(k);
      else
        parse_tensor(k, role);
      if (!accept(TokenKind::Comma)) break;
      skip_newlines();
    }
    end_of_line("',' or the end of the line after a declaration");
  }

  /// A declaration or statement must end at a newline, `;` or the kernel's `}`.
  void end_of_line(const std::string& expected) {
    if (at(TokenKind::Newline) || at(TokenKind::Semicolon) || at(TokenKind::RBrace)) return;
    unexpected(peek(), expected);
  }

  DType parse_dtype_token() {
    if (!at(TokenKind::Ident)) unexpected(peek(), "a dtype");
    Token t = take();
    auto d = parse_dtype(t.text);
    if (!d) fail(t, fmt::format("unknown dtype '{}'", t.text), kDTypeHint);
    return *d;
  }

  void parse_tensor(Kernel& k, TensorRole role) {
    TensorDecl d;
    d.dtype = parse_dtype_token();
    d.role = role;
    if (!at(TokenKind::LBracket))
      fail(peek(), fmt::format("expected '[' after the dtype, got {}", describe(peek())),
           "a tensor is declared as f32[M, N] X; a scalar tensor as f32[] x");
    Token open = take();
    if (!at(TokenKind::RBracket)) {
      for (;;) {
        d.shape.push_back(parse_expr_top());
        if (!accept(TokenKind::Comma)) break;
      }
    }
    expect_close(TokenKind::RBracket, open);
    Token name = expect_ident("a tensor name");
    d.name = name.text;
    d.loc = name.loc;
    k.tensors.push_back(std::move(d));
  }

  void parse_param(Kernel& k) {
    ParamDecl p;
    p.dtype = parse_dtype_token();
    if (at(TokenKind::LBracket))
      fail(peek(), "a param is a scalar and has no shape",
           "declare tensors under input:, output: or local:");
    Token name = expect_ident("a param name");
    p.name = name.text;
    p.loc = name.loc;
    k.params.push_back(std::move(p));
  }

  // ---- statements ----------------------------------------------------------------------

  void parse_statements(Kernel& k) {
    for (;;) {
      skip_separators();
      const Token& t = peek();
      if (t.kind == TokenKind::RBrace) return;
      if (t.kind == TokenKind::Ident && peek(1).kind == TokenKind::Colon) return;
      if (t.kind == TokenKind::Ident && t.text == "kernel") return; // reported by the caller
      k.body.push_back(parse_statement());
      end_of_line("the end of the statement");
    }
  }

  Comprehension parse_statement() {
    Comprehension c;
    if (!at(TokenKind::Ident)) unexpected(peek(), "a statement such as C[i] = A[i]");
    Token out = expect_ident("a tensor name");
    c.output = out.text;
    c.loc = out.loc;
    if (!at(TokenKind::LBracket))
      fail(peek(), fmt::format("expected '[' after '{}', got {}", out.text, describe(peek())),
           fmt::format("the left-hand side is written {}[i, j] (or {}[] for a scalar tensor)",
                       out.text, out.text));
    Token open = take();
    std::vector<Expr> lhs;
    if (!at(TokenKind::RBracket)) {
      for (;;) {
        const Token& first = peek();
        SourceLoc loc = first.loc;
        Expr e = parse_expr_top();
        // A left-hand index that reads a tensor makes the statement an indirect store
        // (scatter), `Y[Idx[i], j] += U[i, j]`; any other non-variable is an error.
        if (e->kind != ExprKind::Var && !reads_tensor(e))
          fail(loc, fmt::format("left-hand index '{}' must be a bare index variable", to_string(e)),
               "offsets and strides belong on the right, e.g. B[i] = A[i + 1] ?? 0",
               static_cast<int>(to_string(e).size()));
        lhs.push_back(e);
        c.index_locs.push_back(loc);
        if (!accept(TokenKind::Comma)) break;
      }
    }
    expect_close(TokenKind::RBracket, open);
    bool indirect = false;
    for (const Expr& e : lhs) indirect |= e->kind != ExprKind::Var;
    if (indirect)
      c.store_indices = std::move(lhs);
    else
      for (const Expr& e : lhs) c.indices.push_back(e->name);
    c.reduce = parse_reduce_op();
    c.value = parse_expr_top();
    return c;
  }

  ReduceKind parse_reduce_op() {
    const Token& t = peek();
    if (accept(TokenKind::Assign)) return ReduceKind::Assign;
    if (accept(TokenKind::PlusAssign)) return ReduceKind::Add;
    if (accept(TokenKind::StarAssign)) return ReduceKind::Mul;
    if (t.kind == TokenKind::Ident && (t.text == "max" || t.text == "min") &&
        peek(1).kind == TokenKind::Assign) {
      bool is_max = t.text == "max";
      take();
      take();
      return is_max ? ReduceKind::Max : ReduceKind::Min;
    }
    if ((t.kind == TokenKind::Minus || t.kind == TokenKind::Slash) && peek(1).kind == TokenKind::Assign)
      fail(t.loc, fmt::format("'{}=' is not an assignment operator", t.text),
           "the operators are =, +=, *=, max= and min=", 2);
    unexpected(t, "an assignment operator (=, +=, *=, max=, min=)");
  }

  // ---- expressions ---------------------------------------------------------------------

  struct NestingGuard {
    ModuleParser& p;
    NestingGuard(ModuleParser& parser, SourceLoc loc) : p(parser) {
      if (++p.nesting_ > kMaxNesting)
        p.fail(loc, fmt::format("expression nested too deeply (more than {} levels)", kMaxNesting),
               "split it into several statements through a local tensor");
    }
    ~NestingGuard() { --p.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
  };

  /// Records the depth of a freshly built node and rejects overly deep trees.
  Expr note(Expr e) {
    int d = 0;
    for (const Expr& o : e->operands) d = std::max(d, depth_of(o));
    d = std::max(d, depth_of(e->guard));
    if (d + 1 > kMaxTreeDepth)
      fail(e->loc, fmt::format("expression too deep (more than {} nested operations)", kMaxTreeDepth),
           "split it into several statements through a local tensor");
    depth_[e.get()] = d + 1;
    return e;
  }
  int depth_of(const Expr& e) {
    if (!e) return 0;
    auto it = depth_.find(e.get());
    return it == depth_.end() ? 1 : it->second;
  }

  /// An expression that ends a declaration dimension, index or statement; the depth table
  /// is only needed while one is being built.
  Expr parse_expr_top() {
    Expr e = parse_select();
    depth_.clear();
    return e;
  }

  Expr parse_select() {
    Expr c = parse_binary(1);
    if (!at(TokenKind::Question)) return c;
    Token q = take();
    NestingGuard guard(*this, q.loc);
    Expr a = parse_select();
    if (!at(TokenKind::Colon)) unexpected(peek(), "':' of the '?' at " + std::to_string(q.loc.line) + ":" + std::to_string(q.loc.col));
    take();
    Expr b = parse_select();
    return note(select(std::move(c), std::move(a), std::move(b), q.loc));
  }

  static int precedence(TokenKind k, BinaryOp& op) {
    switch (k) {
    // C's levels: || && | ^ & (== !=) (< <= > >=) (<< >>) (+ -) (* / // %).
    case TokenKind::OrOr: op = BinaryOp::Or; return 1;
    case TokenKind::AndAnd: op = BinaryOp::And; return 2;
    case TokenKind::Pipe: op = BinaryOp::BitOr; return 3;
    case TokenKind::Caret: op = BinaryOp::BitXor; return 4;
    case TokenKind::Amp: op = BinaryOp::BitAnd; return 5;
    case TokenKind::EqEq: op = BinaryOp::Eq; return 6;
    case TokenKind::Ne: op = BinaryOp::Ne; return 6;
    case TokenKind::Lt: op = BinaryOp::Lt; return 7;
    case TokenKind::Le: op = BinaryOp::Le; return 7;
    case TokenKind::Gt: op = BinaryOp::Gt; return 7;
    case TokenKind::Ge: op = BinaryOp::Ge; return 7;
    case TokenKind::ShiftLeft: op = BinaryOp::Shl; return 8;
    case TokenKind::ShiftRight: op = BinaryOp::Shr; return 8;
    case TokenKind::Plus: op = BinaryOp::Add; return 9;
    case TokenKind::Minus: op = BinaryOp::Sub; return 9;
    case TokenKind::Star: op = BinaryOp::Mul; return 10;
    case TokenKind::Slash: op = BinaryOp::Div; return 10;
    case TokenKind::SlashSlash: op = BinaryOp::FloorDiv; return 10;
    case TokenKind::Percent: op = BinaryOp::Mod; return 10;
    default: return 0;
    }
  }

  /// Precedence climbing over the left-associative binary levels.
  Expr parse_binary(int min_prec) {
    Expr lhs = parse_unary();
    for (;;) {
      BinaryOp op{};
      int prec = precedence(peek().kind, op);
      if (prec == 0 || prec < min_prec) return lhs;
      Token t = take();
      NestingGuard guard(*this, t.loc);
      Expr rhs = parse_binary(prec + 1);
      lhs = note(binary(op, std::move(lhs), std::move(rhs), t.loc));
    }
  }

  Expr parse_unary() {
    const Token& t = peek();
    if (t.kind == TokenKind::Minus) {
      Token minus = take();
      // `-5` and `-inf` are literals, so the printer's output of a negative constant
      // reads back as the same node.
      const Token& n = peek();
      if (n.kind == TokenKind::Int || n.kind == TokenKind::Float ||
          (n.kind == TokenKind::Ident && (n.text == "inf" || n.text == "nan"))) {
        Expr lit = parse_number(take(), true, minus.loc);
        reject_guard_after(lit);
        return lit;
      }
      NestingGuard guard(*this, minus.loc);
      return note(unary(UnaryOp::Neg, parse_unary(), minus.loc));
    }
    if (t.kind == TokenKind::Not) {
      Token bang = take();
      NestingGuard guard(*this, bang.loc);
      return note(unary(UnaryOp::Not, parse_unary(), bang.loc));
    }
    if (t.kind == TokenKind::Tilde) {
      Token tilde = take();
      NestingGuard guard(*this, tilde.loc);
      return note(unary(UnaryOp::BitNot, parse_unary(), tilde.loc));
    }
    return parse_postfix();
  }

  void reject_guard_after(const Expr& e) {
    if (at(TokenKind::QuestionQuestion))
      fail(peek(), "'?""?' must follow a tensor access",
           fmt::format("'{}' is not an access; a default value only applies to reads such as X[i - 1] ?""? 0",
                       to_string(e)));
  }

  Expr parse_postfix() {
    Expr e = parse_primary();
    while (at(TokenKind::QuestionQuestion)) {
      if (e->kind != ExprKind::Access || e->guard) reject_guard_after(e);
      Token q = take();
      NestingGuard guard(*this, q.loc);
      Expr g = parse_unary();
      e = note(access(e->name, e->operands, e->type, std::move(g), e->loc));
    }
    return e;
  }

  Expr parse_number(const Token& t, bool negative, SourceLoc loc) {
    if (t.kind == TokenKind::Ident) { // inf, nan
      double v = t.text == "inf" ? std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::quiet_NaN();
      return note(float_imm(negative ? -v : v, DType::F32, loc));
    }
    std::string text = (negative ? "-" : "") + t.text;
    const char* b = text.data();
    const char* e = text.data() + text.size();
    if (t.kind == TokenKind::Int) {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e)
        fail(t, fmt::format("integer literal '{}' is out of range", text),
             "integer literals must fit in 64 bits");
      return note(int_imm(v, DType::I64, loc));
    }
    double v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow to a subnormal or zero is fine; overflow to infinity is not.
      v = std::strtod(text.c_str(), nullptr);
      if (std::isinf(v))
        fail(t, fmt::format("float literal '{}' is out of range", text),
             "write an infinite value as inf or -inf");
    } else if (r.ec != std::errc() || r.ptr != e) {
      fail(t, fmt::format("bad number literal '{}'", t.text));
    }
    return note(float_imm(v, DType::F32, loc));
  }

  Expr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
    case TokenKind::Int:
    case TokenKind::Float: {
      Token lit = take();
      return parse_number(lit, false, lit.loc);
    }
    case TokenKind::LParen: {
      Token open = take();
      NestingGuard guard(*this, open.loc);
      Expr e = parse_select();
      expect_close(TokenKind::RParen, open);
      return e;
    }
    case TokenKind::Ident: break;
    default: unexpected(t, "an expression");
    }
    Token name = take();
    if (name.text == "true" || name.text == "false") return note(bool_imm(name.text == "true", name.loc));
    if (name.text == "inf" || name.text == "nan") return parse_number(name, false, name.loc);
    if (at(TokenKind::LBracket)) {
      Token open = take();
      NestingGuard guard(*this, open.loc);
      std::vector<Expr> idx = parse_list(TokenKind::RBracket, open);
      return note(access(name.text, std::move(idx), DType::F32, nullptr, name.loc));
    }
    if (at(TokenKind::LParen)) {
      Token open = take();
      NestingGuard guard(*this, open.loc);
      std::vector<Expr> args = parse_list(TokenKind::RParen, open);
      if (auto fn = parse_math_fn(name.text)) return note(call(*fn, std::move(args), name.loc));
      if (auto d = parse_dtype(name.text)) {
        if (args.size() != 1)
          fail(name, fmt::format("cast {}(...) takes 1 argument, got {}", name.text, args.size()));
        return note(cast(*d, std::move(args[0]), name.loc));
      }
      fail(name, fmt::format("unknown function '{}'", name.text),
           "math functions include exp, log, sqrt, rsqrt, tanh, erf, sigmoid, pow, abs, min, "
           "max; casts are written f32(x), i32(x), ...");
    }
    return note(var(name.text, DType::I64, name.loc));
  }

  /// Comma-separated expressions up to the closing bracket (already past the opener).
  std::vector<Expr> parse_list(TokenKind close, const Token& open) {
    std::vector<Expr> items;
    if (accept(close)) return items;
    for (;;) {
      items.push_back(parse_select());
      if (!accept(TokenKind::Comma)) break;
    }
    expect_close(close, open);
    return items;
  }

  const SourceFile& src_;
  Lexer lexer_;
  std::deque<Token> ahead_;
  const Kernel* kernel_ = nullptr; // the kernel being parsed, for "unterminated" messages
  int nesting_ = 0;
  std::unordered_map<const ExprNode*, int> depth_;
};

} // namespace

Module parse_module(const SourceFile& src) { return ModuleParser(src).parse(); }

} // namespace unitile
