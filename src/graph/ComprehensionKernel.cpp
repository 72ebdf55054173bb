// Kernels from bare comprehension statements: the statements are read as tokens (the
// .ut lexer's) to find which tensors they read and write and where an index stands alone,
// then written out as a .ut kernel with concrete declarations and parsed like any file.
#include "graph/ComprehensionKernel.h"

#include "ir/Diagnostic.h"
#include "ir/Lexer.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace unitile::graph {

namespace {

// One `T[...]` in a statement: the tensor and each dimension's tokens.
struct Access {
  std::string tensor;
  std::vector<std::vector<Token>> dims;
  SourceLoc loc;
};

struct Statement {
  std::string output;
  std::vector<std::string> left; // the left-hand index names
  std::vector<SourceLoc> left_locs;
  std::vector<Access> reads;
  std::vector<Token> scalars; // names outside every bracket that are not calls
  std::string text;           // the statement as written
  SourceLoc loc;
};

[[noreturn]] void fail(const SourceFile& src, SourceLoc loc, const std::string& message, const std::string& hint = {}) {
  throw UserError(make_diagnostic(src, loc, message, hint));
}

// The index of the bracket closing the one at `open`.
size_t closing(const std::vector<Token>& t, size_t open) {
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (t[i].kind == TokenKind::LBracket || t[i].kind == TokenKind::LParen) ++depth;
    if (t[i].kind == TokenKind::RBracket || t[i].kind == TokenKind::RParen)
      if (--depth == 0) return i;
  }
  return t.size(); // the lexer has already refused unbalanced brackets
}

// Tokens [from, to) split at commas outside nested brackets.
std::vector<std::vector<Token>> split_dims(const std::vector<Token>& t, size_t from, size_t to) {
  std::vector<std::vector<Token>> dims(1);
  int depth = 0;
  for (size_t i = from; i < to; ++i) {
    if (t[i].kind == TokenKind::LBracket || t[i].kind == TokenKind::LParen) ++depth;
    if (t[i].kind == TokenKind::RBracket || t[i].kind == TokenKind::RParen) --depth;
    if (depth == 0 && t[i].kind == TokenKind::Comma)
      dims.emplace_back();
    else
      dims.back().push_back(t[i]);
  }
  if (dims.size() == 1 && dims[0].empty()) dims.clear();
  return dims;
}

Statement read_statement(const SourceFile& src, const std::vector<Token>& t) {
  Statement s;
  s.loc = t.front().loc;
  const size_t end_offset = t.back().offset + t.back().text.size();
  s.text = src.text.substr(t.front().offset, end_offset - t.front().offset);
  if (t.size() < 4 || t[0].kind != TokenKind::Ident || t[1].kind != TokenKind::LBracket)
    fail(src, s.loc, "a comprehension starts with the tensor it writes",
         "write it as OUT[i, j] = ... (or +=, *=, max=, min=)");
  s.output = t[0].text;
  const size_t close = closing(t, 1);
  for (const std::vector<Token>& d : split_dims(t, 2, close)) {
    if (d.size() != 1 || d[0].kind != TokenKind::Ident)
      fail(src, d.empty() ? t[1].loc : d[0].loc,
           fmt::format("the left-hand side of {} must be index names", s.output),
           "tl.comprehension infers shapes from plain indices; write indirect stores in a .ut kernel "
           "(tl.loads)");
    s.left.push_back(d[0].text);
    s.left_locs.push_back(d[0].loc);
  }
  size_t rhs = close + 1;
  if (rhs < t.size() && t[rhs].kind == TokenKind::Ident && (t[rhs].text == "max" || t[rhs].text == "min")) ++rhs;
  int depth = 0; // brackets only: names inside them are indices
  for (size_t i = rhs; i < t.size(); ++i) {
    const Token& k = t[i];
    const TokenKind next = i + 1 < t.size() ? t[i + 1].kind : TokenKind::End;
    if (k.kind == TokenKind::Ident && next == TokenKind::LBracket) {
      const size_t c = closing(t, i + 1);
      s.reads.push_back({k.text, split_dims(t, i + 2, c), k.loc});
    } else if (k.kind == TokenKind::Ident && depth == 0 && next != TokenKind::LParen) {
      static const std::set<std::string> literals = {"inf", "nan", "true", "false"};
      if (!literals.count(k.text)) s.scalars.push_back(k);
    }
    if (k.kind == TokenKind::LBracket) ++depth;
    if (k.kind == TokenKind::RBracket) --depth;
  }
  return s;
}

std::vector<Statement> read_statements(const SourceFile& src) {
  Lexer lexer(src);
  std::vector<Statement> out;
  std::vector<Token> current;
  for (;;) {
    Token tok = lexer.next();
    const bool ends = tok.kind == TokenKind::End || tok.kind == TokenKind::Newline ||
                      tok.kind == TokenKind::Semicolon;
    if (!ends) {
      current.push_back(std::move(tok));
      continue;
    }
    if (!current.empty()) out.push_back(read_statement(src, current));
    current.clear();
    if (tok.kind == TokenKind::End) break;
  }
  if (out.empty()) throw UserError("error: tl.comprehension: no statement given (e.g. \"C[i,j] += A[i,k] * B[k,j]\")");
  return out;
}

template <typename T> bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

ComprehensionSignature signature_of(const std::vector<Statement>& stmts) {
  ComprehensionSignature sig;
  std::vector<std::string> written;
  std::set<std::string> indices; // every name used inside brackets
  for (const Statement& s : stmts) {
    indices.insert(s.left.begin(), s.left.end());
    for (const Access& a : s.reads)
      for (const auto& d : a.dims)
        for (const Token& k : d)
          if (k.kind == TokenKind::Ident) indices.insert(k.text);
  }
  for (size_t n = 0; n < stmts.size(); ++n) {
    for (const Access& a : stmts[n].reads)
      if (!contains(written, a.tensor) && !contains(sig.inputs, a.tensor)) sig.inputs.push_back(a.tensor);
    if (!contains(written, stmts[n].output)) written.push_back(stmts[n].output);
    for (const Token& k : stmts[n].scalars)
      if (!indices.count(k.text) && !contains(sig.params, k.text)) sig.params.push_back(k.text);
  }
  for (const std::string& w : written) {
    if (contains(sig.inputs, w)) continue; // read before written: the verifier will say so
    bool read_later = false;
    bool seen_write = false;
    for (const Statement& s : stmts) {
      if (seen_write)
        for (const Access& a : s.reads) read_later |= a.tensor == w;
      seen_write |= s.output == w;
    }
    (read_later ? sig.locals : sig.outputs).push_back(w);
  }
  return sig;
}

std::string declaration(DType dtype, const std::vector<int64_t>& shape, const std::string& name) {
  return fmt::format("{}[{}] {}", dtype_name(dtype), fmt::join(shape, ", "), name);
}

} // namespace

ComprehensionSignature comprehension_signature(const std::string& statements) {
  const SourceFile src{"<comprehension>", statements};
  return signature_of(read_statements(src));
}

ComprehensionKernel comprehension_kernel(const std::string& name, const std::string& statements,
                                         const ComprehensionTypes& types) {
  const SourceFile src{"<comprehension>", statements};
  const std::vector<Statement> stmts = read_statements(src);
  const ComprehensionSignature sig = signature_of(stmts);
  for (const std::string& in : sig.inputs)
    if (!types.inputs.count(in))
      throw UserError(fmt::format("error: tl.comprehension: no value for input '{}' (inputs: {})", in,
                                  fmt::join(sig.inputs, ", ")));
  for (const auto& [given, type] : types.inputs)
    if (!contains(sig.inputs, given))
      throw UserError(fmt::format("error: tl.comprehension: '{}' is not an input of these statements (inputs: {})",
                                  given, fmt::join(sig.inputs, ", ")));
  for (const std::string& p : sig.params)
    if (!types.params.count(p))
      throw UserError(fmt::format("error: tl.comprehension: no value for scalar '{}' (pass it by name, e.g. {}=1.0)",
                                  p, p));
  const DType written_dtype =
      types.dtype ? *types.dtype : sig.inputs.empty() ? DType::F32 : types.inputs.at(sig.inputs.front()).dtype;

  // Extents of written tensors, statement by statement, from dimensions already known.
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [n, t] : types.inputs) shapes[n] = t.shape;
  for (const Statement& s : stmts) {
    if (shapes.count(s.output)) continue;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < s.left.size(); ++d) {
      std::optional<int64_t> extent;
      for (const Access& a : s.reads) {
        auto known = shapes.find(a.tensor);
        if (known == shapes.end() || known->second.size() != a.dims.size()) continue;
        for (size_t k = 0; k < a.dims.size() && !extent; ++k)
          if (a.dims[k].size() == 1 && a.dims[k][0].text == s.left[d]) extent = known->second[k];
        if (extent) break;
      }
      if (!extent)
        fail(src, s.left_locs[d], fmt::format("cannot infer the extent of index '{}' of {}", s.left[d], s.output),
             fmt::format("use '{}' alone as an index of an input on the right-hand side", s.left[d]));
      shape.push_back(*extent);
    }
    shapes[s.output] = shape;
  }

  std::vector<std::string> in, out, local, param;
  for (const std::string& n : sig.inputs) in.push_back(declaration(types.inputs.at(n).dtype, shapes.at(n), n));
  for (const std::string& n : sig.outputs) out.push_back(declaration(written_dtype, shapes.at(n), n));
  for (const std::string& n : sig.locals) local.push_back(declaration(written_dtype, shapes.at(n), n));
  for (const std::string& n : sig.params) param.push_back(fmt::format("{} {}", dtype_name(types.params.at(n)), n));
  if (out.empty())
    throw UserError("error: tl.comprehension: every written tensor is read again later; nothing is an output");

  ComprehensionKernel ck;
  ck.text = fmt::format("kernel {} {{\n", name);
  if (!in.empty()) ck.text += fmt::format("  input: {}\n", fmt::join(in, ", "));
  ck.text += fmt::format("  output: {}\n", fmt::join(out, ", "));
  if (!local.empty()) ck.text += fmt::format("  local: {}\n", fmt::join(local, ", "));
  if (!param.empty()) ck.text += fmt::format("  param: {}\n", fmt::join(param, ", "));
  ck.text += "  operation:\n";
  for (const Statement& s : stmts) ck.text += "    " + s.text + "\n";
  ck.text += "}\n";
  ck.module = parse_module(SourceFile{"<comprehension " + name + ">", ck.text});
  return ck;
}

} // namespace unitile::graph
