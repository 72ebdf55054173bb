// Printing graphs as text and parsing the text back (the syntax is in GraphText.h). The
// parser uses the .ut lexer; every node goes through Graph::add_node, so parsed graphs
// are instantiated and typed exactly like traced ones.
#include "graph/GraphText.h"

#include "ir/Diagnostic.h"
#include "ir/Lexer.h"
#include "ops/OpLibrary.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace unitile::graph {

std::string type_text(const ops::TensorSpec& t) {
  return fmt::format("{}[{}]", dtype_name(t.dtype), fmt::join(t.shape, ", "));
}

namespace {

std::string float_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{}", x);
  // Keep it a float literal when it reads back: `1` would be an integer.
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

} // namespace

std::string attr_text(const ops::AttrValue& v, bool as_bool) {
  struct Visitor {
    bool as_bool;
    std::string operator()(int64_t x) const {
      if (as_bool && (x == 0 || x == 1)) return x ? "true" : "false";
      return std::to_string(x);
    }
    std::string operator()(double x) const { return float_text(x); }
    std::string operator()(const std::string& s) const { return quoted(s); }
    std::string operator()(const std::vector<int64_t>& xs) const { return fmt::format("[{}]", fmt::join(xs, ", ")); }
    std::string operator()(const std::vector<double>& xs) const {
      std::vector<std::string> parts;
      for (double x : xs) parts.push_back(float_text(x));
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
  };
  return std::visit(Visitor{as_bool}, v);
}

std::vector<std::string> value_names(const Graph& g, const std::vector<size_t>& order) {
  std::vector<std::string> names(g.values().size());
  for (ValueId v : g.inputs()) names[static_cast<size_t>(v)] = g.value(v).input_name;
  int next = 0;
  auto name_node = [&](size_t n) {
    for (const auto& [port, v] : g.nodes()[n].outputs) names[static_cast<size_t>(v)] = "%" + std::to_string(next++);
  };
  if (order.empty())
    for (size_t n = 0; n < g.nodes().size(); ++n) name_node(n);
  else
    for (size_t n : order) name_node(n);
  return names;
}

namespace {

// The op's input ports in order, a variadic one expanded far enough for `count` inputs.
std::vector<std::string> port_names(const ops::OpDef& op, size_t count) {
  std::vector<std::string> out;
  for (const ops::Port& p : op.inputs) {
    if (!p.variadic) {
      out.push_back(p.name);
      continue;
    }
    for (size_t k = 0; out.size() < count || k == 0; ++k) out.push_back(p.name + std::to_string(k));
  }
  return out;
}

} // namespace

std::string print_graph(const Graph& g, const std::string& name, const GraphPrintOptions& opts) {
  std::vector<size_t> order = opts.order;
  if (order.empty())
    for (size_t n = 0; n < g.nodes().size(); ++n) order.push_back(n);
  const std::vector<std::string> names = value_names(g, order);
  auto name_of = [&](ValueId v) { return names[static_cast<size_t>(v)]; };

  std::vector<std::string> params;
  for (ValueId v : g.inputs()) params.push_back(fmt::format("{}: {}", name_of(v), type_text(g.value(v).type)));
  std::string out = fmt::format("graph {}({}) {{\n", name, fmt::join(params, ", "));
  for (size_t n : order) {
    if (opts.comments_before)
      for (const std::string& line : opts.comments_before(n)) out += "  // " + line + "\n";
    const Node& node = g.nodes()[n];
    const ops::OpDef& op = graph_op(node.op);
    const ops::Attrs defaults = ops::resolve_attrs(op, {});
    std::vector<std::string> results, args, attrs, types;
    for (const auto& [port, v] : node.outputs) {
      results.push_back(name_of(v));
      types.push_back(type_text(g.value(v).type));
    }
    // Positional, in the op's port order: an optional port left out before a given one
    // prints as `_`.
    std::map<std::string, ValueId> bound(node.inputs.begin(), node.inputs.end());
    for (const std::string& port : port_names(op, node.inputs.size())) {
      if (bound.empty()) break;
      auto it = bound.find(port);
      if (it == bound.end()) {
        args.push_back("_");
        continue;
      }
      args.push_back(name_of(it->second));
      bound.erase(it);
    }
    UT_INTERNAL_ASSERT(bound.empty(), "a node binds a port its op does not have");
    for (const ops::AttrSpec& spec : op.attrs) {
      auto it = node.attrs.find(spec.name);
      if (it == node.attrs.end()) continue;
      if (auto d = defaults.find(spec.name); d != defaults.end() && d->second == it->second) continue;
      attrs.push_back(fmt::format("{} = {}", spec.name, attr_text(it->second, spec.kind == ops::AttrKind::Bool)));
    }
    out += fmt::format("  {} = {}({})", fmt::join(results, ", "), node.op, fmt::join(args, ", "));
    if (!attrs.empty()) out += fmt::format(" {{{}}}", fmt::join(attrs, ", "));
    if (opts.types) out += fmt::format(" : {}", fmt::join(types, ", "));
    out += "\n";
  }
  std::vector<std::string> rets;
  for (ValueId v : g.outputs()) rets.push_back(name_of(v));
  out += rets.empty() ? "  return\n" : fmt::format("  return {}\n", fmt::join(rets, ", "));
  for (const std::string& line : opts.trailer) out += "  // " + line + "\n";
  return out + "}\n";
}

namespace {

std::string strip_error(std::string msg) {
  if (msg.starts_with("error: ")) msg = msg.substr(7);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return msg;
}

class GraphParser {
public:
  explicit GraphParser(const SourceFile& src) : src_(src), lexer_(src) { tok_ = lexer_.next(); }

  NamedGraph parse() {
    skip_newlines();
    const Token kw = take();
    if (kw.kind != TokenKind::Ident || kw.text != "graph")
      fail(kw, fmt::format("expected 'graph', got {}", describe(kw)), "a .utg file holds graph NAME(INPUTS) { ... }");
    NamedGraph out;
    out.name = expect(TokenKind::Ident, "a graph name").text;
    const Token open = expect(TokenKind::LParen, "'(' after the graph name");
    if (!accept(TokenKind::RParen)) {
      do {
        const Token name = expect(TokenKind::Ident, "an input name");
        if (name.text == "_") fail(name, "'_' stands for a left-out optional input and cannot name a graph input");
        if (values_.count(name.text)) fail(name, fmt::format("graph input '{}' is given twice", name.text));
        expect(TokenKind::Colon, fmt::format("':' and a type after input '{}'", name.text));
        const ops::TensorSpec type = parse_type();
        values_[name.text] = out.graph.add_input(name.text, type);
      } while (accept(TokenKind::Comma));
      expect_close(TokenKind::RParen, open);
    }
    const Token brace = expect(TokenKind::LBrace, "'{' before the graph's body");
    bool returned = false;
    for (;;) {
      skip_newlines();
      if (at(TokenKind::RBrace)) break;
      if (at(TokenKind::End))
        fail(brace, fmt::format("unterminated graph '{}': missing '}}'", out.name), "the body ends with '}'");
      if (returned) fail(tok_, "statement after 'return'", "'return' is the graph's last statement");
      if (at(TokenKind::Ident) && tok_.text == "return") {
        parse_return(out.graph);
        returned = true;
      } else {
        parse_node(out.graph);
      }
      end_of_line();
    }
    if (!returned) fail(tok_, fmt::format("graph '{}' has no 'return'", out.name), "end the body with return VALUES");
    take();
    skip_newlines();
    if (!at(TokenKind::End)) fail(tok_, fmt::format("expected the end of the file, got {}", describe(tok_)),
                                  "a .utg file holds one graph");
    return out;
  }

private:
  // ---- tokens ------------------------------------------------------------------------
  static std::string describe(const Token& t) {
    switch (t.kind) {
    case TokenKind::Ident: return fmt::format("identifier '{}'", t.text);
    case TokenKind::Int:
    case TokenKind::Float: return fmt::format("number '{}'", t.text);
    case TokenKind::String: return fmt::format("string \"{}\"", t.text);
    default: return token_kind_spelling(t.kind);
    }
  }
  bool at(TokenKind k) const { return tok_.kind == k; }
  Token take() {
    Token t = tok_;
    tok_ = lexer_.next();
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  [[noreturn]] void fail(SourceLoc loc, const std::string& msg, const std::string& hint = {}, int len = 1) const {
    throw UserError(make_diagnostic(src_, loc, msg, hint, len));
  }
  [[noreturn]] void fail(const Token& t, const std::string& msg, const std::string& hint = {}) const {
    fail(t.loc, msg, hint, t.text.empty() ? 1 : static_cast<int>(t.text.size()));
  }
  Token expect(TokenKind k, const std::string& what) {
    if (!at(k)) fail(tok_, fmt::format("expected {}, got {}", what, describe(tok_)));
    return take();
  }
  void expect_close(TokenKind close, const Token& open) {
    if (accept(close)) return;
    fail(tok_, fmt::format("expected {} to close the {} at {}:{}, got {}", token_kind_spelling(close),
                           token_kind_spelling(open.kind), open.loc.line, open.loc.col, describe(tok_)));
  }
  void skip_newlines() {
    while (at(TokenKind::Newline) || at(TokenKind::Semicolon)) take();
  }
  void end_of_line() {
    if (at(TokenKind::Newline) || at(TokenKind::Semicolon) || at(TokenKind::RBrace)) return;
    fail(tok_, fmt::format("expected the end of the statement, got {}", describe(tok_)), "one statement per line");
  }

  // ---- pieces ------------------------------------------------------------------------
  ops::TensorSpec parse_type() {
    const Token dt = expect(TokenKind::Ident, "a dtype such as f32");
    std::optional<DType> d = parse_dtype(dt.text);
    if (!d) fail(dt, fmt::format("unknown dtype '{}'", dt.text), "dtypes: f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool");
    ops::TensorSpec t{*d, {}};
    const Token open = expect(TokenKind::LBracket, fmt::format("'[' and the shape after '{}'", dt.text));
    if (!accept(TokenKind::RBracket)) {
      do {
        const Token n = expect(TokenKind::Int, "an extent (a non-negative integer)");
        t.shape.push_back(std::stoll(n.text));
      } while (accept(TokenKind::Comma));
      expect_close(TokenKind::RBracket, open);
    }
    return t;
  }

  // `%NAME`: the `%` and the name (an integer or identifier) written together.
  std::string parse_result_name() {
    const Token pct = expect(TokenKind::Percent, "a result such as %0");
    if ((!at(TokenKind::Int) && !at(TokenKind::Ident)) || tok_.offset != pct.offset + 1)
      fail(pct, "expected a value name right after '%'", "results are written %0, %1, %h ...");
    return "%" + take().text;
  }

  ValueId parse_value_ref() {
    const Token start = tok_;
    std::string name;
    if (at(TokenKind::Percent)) {
      name = parse_result_name();
    } else if (at(TokenKind::Ident)) {
      name = take().text;
    } else {
      fail(tok_, fmt::format("expected a value (%NAME or an input name), got {}", describe(tok_)));
    }
    auto it = values_.find(name);
    if (it == values_.end())
      fail(start.loc, fmt::format("unknown value '{}'", name), "values are graph inputs or results defined above",
           static_cast<int>(name.size()));
    return it->second;
  }

  double parse_number(bool* is_int, int64_t* int_value) {
    const bool negative = accept(TokenKind::Minus);
    const Token t = take();
    if (t.kind == TokenKind::Int) {
      *is_int = true;
      *int_value = (negative ? -1 : 1) * std::stoll(t.text);
      return static_cast<double>(*int_value);
    }
    *is_int = false;
    double x = 0;
    if (t.kind == TokenKind::Float) x = std::stod(t.text);
    else if (t.kind == TokenKind::Ident && t.text == "inf") x = HUGE_VAL;
    else if (t.kind == TokenKind::Ident && t.text == "nan") x = std::nan("");
    else fail(t, fmt::format("expected a number, got {}", describe(t)));
    return negative ? -x : x;
  }

  ops::AttrValue parse_attr_value() {
    if (at(TokenKind::String)) return take().text;
    if (at(TokenKind::Ident) && (tok_.text == "true" || tok_.text == "false")) return int64_t{take().text == "true"};
    if (at(TokenKind::LBracket)) {
      const Token open = take();
      std::vector<int64_t> ints;
      std::vector<double> floats;
      bool all_ints = true;
      if (!accept(TokenKind::RBracket)) {
        do {
          bool is_int = false;
          int64_t i = 0;
          floats.push_back(parse_number(&is_int, &i));
          ints.push_back(i);
          all_ints = all_ints && is_int;
        } while (accept(TokenKind::Comma));
        expect_close(TokenKind::RBracket, open);
      }
      if (all_ints) return ints;
      return floats;
    }
    bool is_int = false;
    int64_t i = 0;
    const double x = parse_number(&is_int, &i);
    if (is_int) return i;
    return x;
  }

  void parse_node(Graph& g) {
    // Results.
    const Token first = tok_;
    std::vector<std::pair<std::string, Token>> results;
    do {
      const Token at_tok = tok_;
      const std::string name = parse_result_name();
      if (values_.count(name)) fail(at_tok.loc, fmt::format("value '{}' is defined twice", name), {},
                                    static_cast<int>(name.size()));
      results.emplace_back(name, at_tok);
    } while (accept(TokenKind::Comma));
    expect(TokenKind::Assign, "'=' after the results");

    // The op and its inputs.
    const Token op_tok = expect(TokenKind::Ident, "an op name");
    const ops::OpDef* op = nullptr;
    try {
      op = &graph_op(op_tok.text);
    } catch (const UserError& e) {
      fail(op_tok, strip_error(e.what()));
    }
    const Token open = expect(TokenKind::LParen, fmt::format("'(' after '{}'", op_tok.text));
    std::vector<ValueId> inputs;
    if (!accept(TokenKind::RParen)) {
      do {
        if (at(TokenKind::Ident) && tok_.text == "_") {
          take();
          inputs.push_back(-1); // an optional port left out
        } else {
          inputs.push_back(parse_value_ref());
        }
      } while (accept(TokenKind::Comma));
      expect_close(TokenKind::RParen, open);
    }
    check_arity(*op, op_tok, inputs.size());

    ops::Attrs attrs;
    if (at(TokenKind::LBrace)) {
      take();
      if (!accept(TokenKind::RBrace)) {
        do {
          const Token name = expect(TokenKind::Ident, "an attribute name");
          if (attrs.count(name.text)) fail(name, fmt::format("attribute '{}' is given twice", name.text));
          expect(TokenKind::Assign, fmt::format("'=' after attribute '{}'", name.text));
          attrs[name.text] = parse_attr_value();
        } while (accept(TokenKind::Comma));
        expect(TokenKind::RBrace, "'}' after the attributes");
      }
    }

    // Instantiate: shape, dtype and attribute errors are the op's, shown at the node.
    const std::string where = fmt::format("{}:{}:{}", src_.name, op_tok.loc.line, op_tok.loc.col);
    // With `_` the inputs are bound by port name, leaving the skipped ports out.
    const std::vector<std::string> ports = port_names(*op, inputs.size());
    std::vector<std::pair<std::string, ValueId>> bound;
    const bool skips = std::find(inputs.begin(), inputs.end(), -1) != inputs.end();
    for (size_t i = 0; i < inputs.size() && skips; ++i) {
      if (inputs[i] >= 0) {
        bound.emplace_back(ports[i], inputs[i]);
        continue;
      }
      const ops::Port* port = nullptr;
      for (const ops::Port& p : op->inputs)
        if (p.name == ports[i]) port = &p;
      if (port == nullptr || !port->optional)
        fail(op_tok, fmt::format("'_' leaves out input {} ({}) of {}, which is not optional", i + 1, ports[i], op->name));
    }
    std::vector<ValueId> outs;
    try {
      outs = skips ? g.add_node_ports(op_tok.text, bound, attrs, where) : g.add_node(op_tok.text, inputs, attrs, where);
    } catch (const UserError& e) {
      std::string msg = e.what();
      if (msg.starts_with(where + ": ")) msg = msg.substr(where.size() + 2);
      fail(op_tok, strip_error(msg));
    }
    if (outs.size() != results.size())
      fail(first.loc, fmt::format("{} gives {} result{} here, but {} name{} given", op_tok.text, outs.size(),
                                  outs.size() == 1 ? "" : "s", results.size(), results.size() == 1 ? " is" : "s are"),
           {}, 1);

    // Optional types: each must be what the op gives.
    if (accept(TokenKind::Colon)) {
      size_t i = 0;
      do {
        const Token t0 = tok_;
        const ops::TensorSpec t = parse_type();
        if (i >= outs.size()) fail(t0, fmt::format("more types than results ({})", outs.size()));
        const ops::TensorSpec& actual = g.value(outs[i]).type;
        if (!(t == actual))
          fail(t0, fmt::format("{} is {} but is annotated {}", results[i].first, type_text(actual), type_text(t)),
               "the annotation must match the type the op gives");
        ++i;
      } while (accept(TokenKind::Comma));
      if (i != outs.size()) fail(tok_, fmt::format("{} types given for {} results", i, outs.size()));
    }
    for (size_t i = 0; i < outs.size(); ++i) values_[results[i].first] = outs[i];
  }

  void check_arity(const ops::OpDef& op, const Token& op_tok, size_t given) {
    size_t required = 0, max = 0;
    bool variadic = false;
    std::vector<std::string> ports;
    for (const ops::Port& p : op.inputs) {
      ports.push_back(p.variadic ? p.name + "..." : p.optional ? p.name + "?" : p.name);
      if (p.variadic) {
        variadic = true;
        ++required;
      } else {
        ++max;
        if (!p.optional) ++required;
      }
    }
    if (given >= required && (variadic || given <= max)) return;
    std::string count = variadic ? fmt::format("at least {}", required)
                        : required == max ? fmt::format("{}", required)
                                          : fmt::format("{} to {}", required, max);
    fail(op_tok, fmt::format("{} takes {} input{} ({}), got {}", op.name, count,
                             required == 1 && !variadic && required == max ? "" : "s", fmt::join(ports, ", "), given));
  }

  void parse_return(Graph& g) {
    take();
    std::vector<ValueId> outs;
    if (!at(TokenKind::Newline) && !at(TokenKind::RBrace) && !at(TokenKind::Semicolon)) {
      do outs.push_back(parse_value_ref());
      while (accept(TokenKind::Comma));
    }
    g.set_outputs(outs);
  }

  const SourceFile& src_;
  Lexer lexer_;
  Token tok_;
  std::map<std::string, ValueId> values_;
};

} // namespace

NamedGraph parse_graph(const SourceFile& src) { return GraphParser(src).parse(); }

} // namespace unitile::graph
