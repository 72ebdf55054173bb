// Text and JSON forms of a schedule (see Schedule.h).
#include "schedule/Schedule.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <map>

namespace unitile {

namespace {

struct KindName {
  PrimitiveKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {PrimitiveKind::Split, "split"},         {PrimitiveKind::Tile, "tile"},
    {PrimitiveKind::Reorder, "reorder"},     {PrimitiveKind::Fuse, "fuse"},
    {PrimitiveKind::Parallel, "parallel"},   {PrimitiveKind::Vectorize, "vectorize"},
    {PrimitiveKind::Unroll, "unroll"},       {PrimitiveKind::Bind, "bind"},
    {PrimitiveKind::Stage, "stage"},         {PrimitiveKind::CacheWrite, "cache_write"},
    {PrimitiveKind::ComputeAt, "compute_at"}, {PrimitiveKind::Inline, "inline"},
    {PrimitiveKind::MicroKernel, "microkernel"}, {PrimitiveKind::FoldInit, "fold_init"},
    {PrimitiveKind::Epilogue, "epilogue"},
    {PrimitiveKind::FlashAttention, "flash_attention"}, {PrimitiveKind::Widen, "widen"},
    {PrimitiveKind::Pretranspose, "pretranspose"}, {PrimitiveKind::Prefetch, "prefetch"},
    {PrimitiveKind::KeepTerms, "keep_terms"}, {PrimitiveKind::Stream, "stream"},
    {PrimitiveKind::MatrixUnit, "matrix_unit"}, {PrimitiveKind::Hoist, "hoist"},
    {PrimitiveKind::Threads, "threads"},     {PrimitiveKind::ThreadGemm, "thread_gemm"},
    {PrimitiveKind::BlockRows, "block_rows"}, {PrimitiveKind::Defer, "defer"},
};

constexpr ForKind kBindKinds[] = {ForKind::GridX,   ForKind::GridY,   ForKind::GridZ,
                                  ForKind::ThreadX, ForKind::ThreadY, ForKind::ThreadZ};
constexpr MemScope kScopes[] = {MemScope::Global, MemScope::Shared, MemScope::Local,
                                MemScope::Register};

const char* kUsage =
    "primitives: split V F [as O, I]; tile V F, W G; reorder V, W, ...; fuse V, W [as N]; "
    "parallel V; vectorize V; unroll V; bind V grid.x|thread.x|...; stage T local|shared|register "
    "at V; cache_write T register|local at V; compute_at T at V; prefetch T at V [level 2]; defer T at V rows R; keep_terms T at V; hoist T at V; stream T; inline T; widen T; pretranspose T on U; microkernel V; fold_init T; epilogue T; any of "
    "them may end with `on T` (the statement writing T); flash_attention O [rows R keys K [threads TY TX]]; matrix_unit C [tiles BM BN BK "
    "warps WM WN] [tf32]; threads V T; block_rows V T; thread_gemm C [tiles BM BN BK thread TM TN]";

// One token of the schedule text with where it starts.
struct Word {
  std::string text;
  SourceLoc loc;
};

// Splits the body into statements (`;` or newline) of words; `,` is a word of its own.
std::vector<std::vector<Word>> statements_of(const std::string& body, SourceLoc start) {
  std::vector<std::vector<Word>> out(1);
  int line = start.line, col = start.col;
  for (size_t p = 0; p < body.size();) {
    char c = body[p];
    if (c == '\n' || c == ';') {
      if (!out.back().empty()) out.emplace_back();
      if (c == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
      ++p;
      continue;
    }
    if (c == '/' && p + 1 < body.size() && body[p + 1] == '/') {
      while (p < body.size() && body[p] != '\n') ++p;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++p;
      ++col;
      continue;
    }
    Word w{std::string(), SourceLoc{line, col}};
    if (c == ',') {
      w.text = ",";
      ++p;
      ++col;
    } else {
      while (p < body.size() && !std::isspace(static_cast<unsigned char>(body[p])) &&
             body[p] != ';' && body[p] != ',' && !(body[p] == '/' && p + 1 < body.size() && body[p + 1] == '/')) {
        w.text += body[p++];
        ++col;
      }
    }
    out.back().push_back(std::move(w));
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

class StatementParser {
public:
  StatementParser(const std::vector<Word>& words, const std::string& file, SourceLoc end)
      : w_(words), file_(file), end_(end) {}

  Primitive parse() {
    Primitive p;
    p.loc = w_[0].loc;
    const std::string& op = w_[0].text;
    bool known = false;
    for (const KindName& k : kKinds)
      if (op == k.name) {
        p.kind = k.kind;
        known = true;
      }
    if (!known) fail(w_[0], fmt::format("unknown schedule primitive '{}'", op), kUsage);
    pos_ = 1;
    // A trailing `on T` names the statement.
    if (w_.size() >= 3 && w_[w_.size() - 2].text == "on") {
      p.on = ident(w_.back(), "a tensor name after 'on'");
      w_.resize(w_.size() - 2);
    }
    switch (p.kind) {
    case PrimitiveKind::Split:
      p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      p.factors.push_back(factor());
      if (more() && peek().text == "as") {
        ++pos_;
        p.outer = ident(next("the outer loop's name"), "the outer loop's name");
        comma();
        p.inner = ident(next("the inner loop's name"), "the inner loop's name");
      }
      break;
    case PrimitiveKind::Tile:
      do {
        p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
        p.factors.push_back(factor());
      } while (more() && (comma(), true));
      break;
    case PrimitiveKind::Reorder:
      do p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      while (more() && (comma(), true));
      if (p.vars.size() < 2) fail(w_[0], "reorder needs at least two loop variables", kUsage);
      break;
    case PrimitiveKind::Fuse:
      p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      comma();
      p.vars.push_back(ident(next("a second loop variable"), "a loop variable"));
      if (more() && peek().text == "as") {
        ++pos_;
        p.outer = ident(next("the fused loop's name"), "the fused loop's name");
      }
      break;
    case PrimitiveKind::Parallel:
    case PrimitiveKind::Vectorize:
      p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      break;
    case PrimitiveKind::Unroll: // `unroll V` completely, `unroll V F` by F (a hint)
      p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      if (more()) p.factors.push_back(factor());
      break;
    case PrimitiveKind::Bind: {
      p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      const Word& k = next("a loop kind such as grid.x or thread.x");
      bool ok = false;
      for (ForKind f : kBindKinds)
        if (k.text == for_kind_name(f)) {
          p.bind = f;
          ok = true;
        }
      if (!ok) fail(k, fmt::format("'{}' is not a grid or thread axis", k.text),
                    "bind to grid.x, grid.y, grid.z, thread.x, thread.y or thread.z");
      break;
    }
    case PrimitiveKind::Stage:
    case PrimitiveKind::CacheWrite: {
      p.buffer = ident(next("a tensor name"), "a tensor name");
      const Word& s = next("a memory scope");
      bool ok = false;
      for (MemScope m : kScopes)
        if (s.text == mem_scope_name(m) && m != MemScope::Global) {
          p.scope = m;
          ok = true;
        }
      if (!ok) fail(s, fmt::format("'{}' is not a memory scope to stage into", s.text),
                    "use local, shared or register");
      keyword("at");
      p.at = ident(next("a loop variable after 'at'"), "a loop variable");
      break;
    }
    case PrimitiveKind::ComputeAt:
    case PrimitiveKind::Prefetch:
    case PrimitiveKind::KeepTerms:
    case PrimitiveKind::Hoist:
    case PrimitiveKind::Defer:
      p.buffer = ident(next("a tensor name"), "a tensor name");
      keyword("at");
      p.at = ident(next("a loop variable after 'at'"), "a loop variable");
      if (p.kind == PrimitiveKind::Defer) {
        keyword("rows");
        p.factors.push_back(factor());
      }
      if (p.kind == PrimitiveKind::Prefetch && more() && peek().text == "level") {
        ++pos_;
        const Word& w = peek();
        const int64_t level = factor();
        if (level > 2) fail(w, fmt::format("a prefetch fills cache level 1 or 2, not {}", level), kUsage);
        if (level != 1) p.factors.push_back(level);
      }
      break;
    case PrimitiveKind::Inline:
    case PrimitiveKind::Widen:
    case PrimitiveKind::Pretranspose:
    case PrimitiveKind::FoldInit:
    case PrimitiveKind::Epilogue:
    case PrimitiveKind::Stream:
      p.buffer = ident(next("a tensor name"), "a tensor name");
      break;
    case PrimitiveKind::MicroKernel:
      p.at = ident(next("a loop variable"), "a loop variable");
      break;
    case PrimitiveKind::FlashAttention:
      p.buffer = ident(next("the output of an attention chain"), "a tensor name");
      if (more()) {
        keyword("rows");
        p.factors.push_back(factor());
        keyword("keys");
        p.factors.push_back(factor());
        if (more() && peek().text == "threads") {
          keyword("threads");
          p.factors.push_back(factor());
          p.factors.push_back(factor());
        }
      }
      break;
    case PrimitiveKind::MatrixUnit:
      p.buffer = ident(next("the output of a contraction"), "a tensor name");
      if (more() && peek().text == "tiles") {
        keyword("tiles");
        for (int n = 0; n < 3; ++n) p.factors.push_back(factor());
        keyword("warps");
        for (int n = 0; n < 2; ++n) p.factors.push_back(factor());
      }
      if (more() && peek().text == "tf32") {
        ++pos_;
        p.vars.push_back("tf32");
      }
      break;
    case PrimitiveKind::Threads:
    case PrimitiveKind::BlockRows:
      p.vars.push_back(ident(next("a loop variable"), "a loop variable"));
      p.factors.push_back(factor());
      break;
    case PrimitiveKind::ThreadGemm:
      p.buffer = ident(next("the output of a contraction"), "a tensor name");
      if (more()) {
        keyword("tiles");
        for (int n = 0; n < 3; ++n) p.factors.push_back(factor());
        keyword("thread");
        for (int n = 0; n < 2; ++n) p.factors.push_back(factor());
      }
      break;
    }
    if (more()) fail(peek(), fmt::format("unexpected '{}' after {}", peek().text, op), kUsage);
    return p;
  }

private:
  bool more() const { return pos_ < w_.size(); }
  const Word& peek() const { return w_[pos_]; }
  const Word& next(const std::string& what) {
    if (!more()) {
      Word last = w_.back();
      last.loc.col += static_cast<int>(last.text.size()) + 1;
      fail(last, fmt::format("expected {} after '{}'", what, w_.back().text), kUsage);
    }
    return w_[pos_++];
  }
  void comma() {
    if (!more() || peek().text != ",")
      fail(more() ? peek() : w_.back(), "expected ','", kUsage);
    ++pos_;
  }
  void keyword(const char* kw) {
    const Word& k = next(fmt::format("'{}'", kw));
    if (k.text != kw) fail(k, fmt::format("expected '{}', got '{}'", kw, k.text), kUsage);
  }
  std::string ident(const Word& w, const std::string& what) {
    bool ok = !w.text.empty() && (std::isalpha(static_cast<unsigned char>(w.text[0])) || w.text[0] == '_');
    for (char c : w.text) ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!ok) fail(w, fmt::format("expected {}, got '{}'", what, w.text), kUsage);
    return w.text;
  }
  int64_t factor() {
    const Word& w = next("a positive integer factor");
    int64_t v = 0;
    bool ok = !w.text.empty() && w.text.size() < 12;
    for (char c : w.text) ok &= std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (ok) v = std::stoll(w.text);
    if (!ok || v < 1)
      fail(w, fmt::format("expected a positive integer factor, got '{}'", w.text),
           "factors are loop extents such as 8, 64 or 256");
    return v;
  }
  [[noreturn]] void fail(const Word& w, const std::string& msg, const std::string& hint) const {
    throw UserError(Diagnostic{file_, w.loc, "schedule: " + msg, hint, {},
                               std::max(1, static_cast<int>(w.text.size()))});
  }

  std::vector<Word> w_;
  const std::string& file_;
  SourceLoc end_;
  size_t pos_ = 0;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t n = 0; n < v.size(); ++n) s += (n ? ", " : "") + v[n];
  return s;
}

} // namespace

const char* primitive_name(PrimitiveKind k) {
  for (const KindName& n : kKinds)
    if (n.kind == k) return n.name;
  return "?";
}

std::string to_text(const Schedule& s) {
  std::string out;
  for (const Primitive& p : s.primitives) {
    std::string line = primitive_name(p.kind);
    switch (p.kind) {
    case PrimitiveKind::Split:
      line += fmt::format(" {} {}", p.vars.at(0), p.factors.at(0));
      if (!p.outer.empty()) line += fmt::format(" as {}, {}", p.outer, p.inner);
      break;
    case PrimitiveKind::Tile:
      for (size_t n = 0; n < p.vars.size(); ++n)
        line += fmt::format("{} {} {}", n ? "," : "", p.vars[n], p.factors.at(n));
      break;
    case PrimitiveKind::Reorder: line += " " + join(p.vars); break;
    case PrimitiveKind::Fuse:
      line += " " + join(p.vars);
      if (!p.outer.empty()) line += " as " + p.outer;
      break;
    case PrimitiveKind::Parallel:
    case PrimitiveKind::Vectorize: line += " " + p.vars.at(0); break;
    case PrimitiveKind::Unroll:
      line += " " + p.vars.at(0);
      if (!p.factors.empty()) line += fmt::format(" {}", p.factors[0]);
      break;
    case PrimitiveKind::Bind: line += fmt::format(" {} {}", p.vars.at(0), for_kind_name(p.bind)); break;
    case PrimitiveKind::Stage:
    case PrimitiveKind::CacheWrite:
      line += fmt::format(" {} {} at {}", p.buffer, mem_scope_name(p.scope), p.at);
      break;
    case PrimitiveKind::ComputeAt:
    case PrimitiveKind::KeepTerms:
    case PrimitiveKind::Hoist: line += fmt::format(" {} at {}", p.buffer, p.at); break;
    case PrimitiveKind::Defer: line += fmt::format(" {} at {} rows {}", p.buffer, p.at, p.factors.at(0)); break;
    case PrimitiveKind::Prefetch:
      line += fmt::format(" {} at {}", p.buffer, p.at);
      if (!p.factors.empty()) line += fmt::format(" level {}", p.factors[0]);
      break;
    case PrimitiveKind::Inline:
    case PrimitiveKind::Widen:
    case PrimitiveKind::Pretranspose:
    case PrimitiveKind::FoldInit:
    case PrimitiveKind::Epilogue:
    case PrimitiveKind::Stream: line += " " + p.buffer; break;
    case PrimitiveKind::MicroKernel: line += " " + p.at; break;
    case PrimitiveKind::FlashAttention:
      line += " " + p.buffer;
      if (p.factors.size() >= 2) line += fmt::format(" rows {} keys {}", p.factors[0], p.factors[1]);
      if (p.factors.size() == 4) line += fmt::format(" threads {} {}", p.factors[2], p.factors[3]);
      break;
    case PrimitiveKind::MatrixUnit:
      line += " " + p.buffer;
      if (p.factors.size() == 5)
        line += fmt::format(" tiles {} {} {} warps {} {}", p.factors[0], p.factors[1], p.factors[2], p.factors[3],
                            p.factors[4]);
      if (!p.vars.empty()) line += " tf32";
      break;
    case PrimitiveKind::Threads:
    case PrimitiveKind::BlockRows: line += fmt::format(" {} {}", p.vars.at(0), p.factors.at(0)); break;
    case PrimitiveKind::ThreadGemm:
      line += " " + p.buffer;
      if (p.factors.size() == 5)
        line += fmt::format(" tiles {} {} {} thread {} {}", p.factors[0], p.factors[1], p.factors[2], p.factors[3],
                            p.factors[4]);
      break;
    }
    if (!p.on.empty()) line += " on " + p.on;
    out += line + "\n";
  }
  return out;
}

Schedule parse_schedule(const std::string& body, const std::string& file, SourceLoc start) {
  Schedule s;
  for (const std::vector<Word>& st : statements_of(body, start))
    s.primitives.push_back(StatementParser(st, file, start).parse());
  return s;
}

std::string to_json(const Schedule& s) {
  nlohmann::json list = nlohmann::json::array();
  for (const Primitive& p : s.primitives) {
    nlohmann::json j;
    j["op"] = primitive_name(p.kind);
    if (!p.vars.empty()) j["vars"] = p.vars;
    if (!p.factors.empty()) j["factors"] = p.factors;
    if (!p.outer.empty()) j["outer"] = p.outer;
    if (!p.inner.empty()) j["inner"] = p.inner;
    if (!p.buffer.empty()) j["buffer"] = p.buffer;
    if (!p.at.empty()) j["at"] = p.at;
    if (p.kind == PrimitiveKind::Stage || p.kind == PrimitiveKind::CacheWrite)
      j["scope"] = mem_scope_name(p.scope);
    if (p.kind == PrimitiveKind::Bind) j["bind"] = for_kind_name(p.bind);
    if (!p.on.empty()) j["on"] = p.on;
    list.push_back(std::move(j));
  }
  return nlohmann::json{{"primitives", list}}.dump();
}

Schedule schedule_from_json(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) -> UserError {
    return UserError(fmt::format("error: {}: not a schedule: {}", what, why));
  };
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw bad("malformed JSON");
  if (!doc.is_object() || !doc.contains("primitives") || !doc["primitives"].is_array())
    throw bad("expected an object with a \"primitives\" list");
  Schedule s;
  try {
    for (const nlohmann::json& j : doc["primitives"]) {
      Primitive p;
      std::string op = j.at("op").get<std::string>();
      bool known = false;
      for (const KindName& k : kKinds)
        if (op == k.name) {
          p.kind = k.kind;
          known = true;
        }
      if (!known) throw bad("unknown primitive \"" + op + "\"");
      p.vars = j.value("vars", std::vector<std::string>{});
      p.factors = j.value("factors", std::vector<int64_t>{});
      p.outer = j.value("outer", "");
      p.inner = j.value("inner", "");
      p.buffer = j.value("buffer", "");
      p.at = j.value("at", "");
      p.on = j.value("on", "");
      std::string scope = j.value("scope", "local");
      for (MemScope m : kScopes)
        if (scope == mem_scope_name(m)) p.scope = m;
      std::string bind = j.value("bind", "grid.x");
      for (ForKind f : kBindKinds)
        if (bind == for_kind_name(f)) p.bind = f;
      s.primitives.push_back(std::move(p));
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  // The text form is canonical: re-parse it so a JSON record obeys the same rules.
  return parse_schedule(to_text(s), what, SourceLoc{1, 1});
}

} // namespace unitile
