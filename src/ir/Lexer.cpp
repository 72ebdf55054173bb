// Tokenizer for the Kernel IR text syntax: identifiers, numbers, operators, newlines.
#include "ir/Lexer.h"

#include <fmt/core.h>

namespace unitile {

namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

} // namespace

std::string token_kind_spelling(TokenKind k) {
  switch (k) {
  case TokenKind::End: return "end of file";
  case TokenKind::Newline: return "end of line";
  case TokenKind::Ident: return "identifier";
  case TokenKind::Int: return "integer literal";
  case TokenKind::Float: return "float literal";
  case TokenKind::LParen: return "'('";
  case TokenKind::RParen: return "')'";
  case TokenKind::LBracket: return "'['";
  case TokenKind::RBracket: return "']'";
  case TokenKind::LBrace: return "'{'";
  case TokenKind::RBrace: return "'}'";
  case TokenKind::Comma: return "','";
  case TokenKind::Colon: return "':'";
  case TokenKind::Semicolon: return "';'";
  case TokenKind::Question: return "'?'";
  case TokenKind::QuestionQuestion: return "'?""?'";
  case TokenKind::Plus: return "'+'";
  case TokenKind::Minus: return "'-'";
  case TokenKind::Star: return "'*'";
  case TokenKind::Slash: return "'/'";
  case TokenKind::SlashSlash: return "'//'";
  case TokenKind::Percent: return "'%'";
  case TokenKind::Lt: return "'<'";
  case TokenKind::Le: return "'<='";
  case TokenKind::Gt: return "'>'";
  case TokenKind::Ge: return "'>='";
  case TokenKind::EqEq: return "'=='";
  case TokenKind::Ne: return "'!='";
  case TokenKind::Assign: return "'='";
  case TokenKind::PlusAssign: return "'+='";
  case TokenKind::StarAssign: return "'*='";
  case TokenKind::Not: return "'!'";
  case TokenKind::AndAnd: return "'&&'";
  case TokenKind::OrOr: return "'||'";
  case TokenKind::String: return "string literal";
  }
  return "token";
}

void Lexer::fail(SourceLoc loc, const std::string& msg, const std::string& hint, int len) const {
  throw UserError(make_diagnostic(src_, loc, msg, hint, len));
}

SourceLoc Lexer::loc_at(size_t pos) const {
  return SourceLoc{line_, static_cast<int>(pos - line_start_) + 1};
}

bool Lexer::preceded_by_space(size_t pos) const {
  if (pos == 0) return true;
  char c = text_[pos - 1];
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

void Lexer::skip_blanks_and_comments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '\n' && bracket_depth_ > 0) {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/' &&
               bracket_depth_ == 0 && preceded_by_space(pos_)) {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      return;
    }
  }
}

Token Lexer::lex_number(size_t start) {
  size_t p = start;
  bool is_float = false, bad = false;
  while (p < text_.size() && is_digit(text_[p])) ++p;
  if (p < text_.size() && text_[p] == '.') {
    is_float = true;
    ++p;
    while (p < text_.size() && is_digit(text_[p])) ++p;
  }
  if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
    is_float = true;
    ++p;
    if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p >= text_.size() || !is_digit(text_[p])) bad = true;
    while (p < text_.size() && is_digit(text_[p])) ++p;
  }
  // A literal glued to letters, digits or another dot (`12ab`, `1.2.3`, `0x1f`) is one
  // malformed literal rather than two tokens.
  while (p < text_.size() && (is_ident_char(text_[p]) || text_[p] == '.')) {
    bad = true;
    ++p;
  }
  Token t;
  t.kind = is_float ? TokenKind::Float : TokenKind::Int;
  t.text = std::string(text_.substr(start, p - start));
  t.loc = loc_at(start);
  t.offset = start;
  if (bad)
    fail(t.loc, fmt::format("bad number literal '{}'", t.text),
         "write integers as 42 and floats as 1.5, .5, 1e-5 or 2.5e3", static_cast<int>(t.text.size()));
  pos_ = p;
  return t;
}

Token Lexer::lex_string(size_t start) {
  Token t;
  t.kind = TokenKind::String;
  t.loc = loc_at(start);
  t.offset = start;
  for (size_t p = start + 1; p < text_.size() && text_[p] != '\n'; ++p) {
    const char c = text_[p];
    if (c == '"') {
      pos_ = p + 1;
      return t;
    }
    if (c == '\\') {
      const char e = p + 1 < text_.size() ? text_[p + 1] : '\0';
      if (e != '"' && e != '\\')
        fail(loc_at(p), "unknown escape in string literal", "only \\\" and \\\\ are escapes", 2);
      t.text += e;
      ++p;
      continue;
    }
    t.text += c;
  }
  fail(t.loc, "unterminated string literal", "a string ends with '\"' on the same line");
}

Token Lexer::next() {
  skip_blanks_and_comments();
  Token t;
  t.loc = loc_at(pos_);
  t.offset = pos_;
  if (pos_ >= text_.size()) {
    t.kind = TokenKind::End;
    return t;
  }
  size_t start = pos_;
  char c = text_[pos_];
  char n = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';

  if (c == '\n') {
    t.kind = TokenKind::Newline;
    ++pos_;
    ++line_;
    line_start_ = pos_;
    return t;
  }
  if (is_ident_start(c)) {
    size_t p = pos_;
    while (p < text_.size() && is_ident_char(text_[p])) ++p;
    t.kind = TokenKind::Ident;
    t.text = std::string(text_.substr(pos_, p - pos_));
    pos_ = p;
    return t;
  }
  if (is_digit(c) || (c == '.' && is_digit(n))) return lex_number(start);
  if (c == '"') return lex_string(start);

  auto take = [&](TokenKind k, size_t len) {
    t.kind = k;
    t.text = std::string(text_.substr(start, len));
    pos_ += len;
    return t;
  };
  switch (c) {
  case '(': ++bracket_depth_; return take(TokenKind::LParen, 1);
  case '[': ++bracket_depth_; return take(TokenKind::LBracket, 1);
  case ')':
  case ']':
    if (bracket_depth_ > 0) --bracket_depth_;
    return take(c == ')' ? TokenKind::RParen : TokenKind::RBracket, 1);
  case '{':
  case '}':
    // A brace inside open brackets means the brackets are unbalanced; resynchronise so
    // newlines and comments after it mean what they look like. The parser reports it.
    bracket_depth_ = 0;
    return take(c == '{' ? TokenKind::LBrace : TokenKind::RBrace, 1);
  case ',': return take(TokenKind::Comma, 1);
  case ':': return take(TokenKind::Colon, 1);
  case ';': return take(TokenKind::Semicolon, 1);
  case '?': return n == '?' ? take(TokenKind::QuestionQuestion, 2) : take(TokenKind::Question, 1);
  case '+': return n == '=' ? take(TokenKind::PlusAssign, 2) : take(TokenKind::Plus, 1);
  case '-': return take(TokenKind::Minus, 1);
  case '*': return n == '=' ? take(TokenKind::StarAssign, 2) : take(TokenKind::Star, 1);
  case '/': return n == '/' ? take(TokenKind::SlashSlash, 2) : take(TokenKind::Slash, 1);
  case '%': return take(TokenKind::Percent, 1);
  case '<': return n == '=' ? take(TokenKind::Le, 2) : take(TokenKind::Lt, 1);
  case '>': return n == '=' ? take(TokenKind::Ge, 2) : take(TokenKind::Gt, 1);
  case '=': return n == '=' ? take(TokenKind::EqEq, 2) : take(TokenKind::Assign, 1);
  case '!': return n == '=' ? take(TokenKind::Ne, 2) : take(TokenKind::Not, 1);
  case '&':
    if (n == '&') return take(TokenKind::AndAnd, 2);
    fail(t.loc, "unexpected character '&'", "logical and is written '&&'");
  case '|':
    if (n == '|') return take(TokenKind::OrOr, 2);
    fail(t.loc, "unexpected character '|'", "logical or is written '||'");
  default: break;
  }
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x21 && byte < 0x7f) fail(t.loc, fmt::format("unexpected character '{}'", c));
  fail(t.loc, fmt::format("unexpected byte 0x{:02x}", byte),
       "the text IR is ASCII outside comments");
}

std::string Lexer::read_braced_raw(SourceLoc open) {
  size_t start = pos_;
  int depth = 1;
  for (size_t p = pos_; p < text_.size(); ++p) {
    char c = text_[p];
    if (c == '\n') {
      ++line_;
      line_start_ = p + 1;
    } else if (c == '/' && p + 1 < text_.size() && text_[p + 1] == '/') {
      // Braces in comments do not count.
      while (p + 1 < text_.size() && text_[p + 1] != '\n') ++p;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      pos_ = p + 1;
      return std::string(text_.substr(start, p - start));
    }
  }
  fail(open, "unterminated schedule block: missing '}'",
       "a schedule block is written schedule { ... } after the kernel's closing brace", 8);
}

} // namespace unitile
