// The tokenizer of the Kernel IR text syntax (.ut files), shared by parse_module.
//
// Newlines end statements, so the lexer reports them as tokens, but only outside () and
// []: a statement may continue over several lines inside brackets. `//` has two meanings
// in this syntax: floor division and a comment to end of line. Inside brackets it is
// always floor division (shapes and index expressions live there); outside brackets it
// starts a comment when it stands at the start of a line or after whitespace, so
// `C[i] = A[i]  // copy` is a comment while `n//2` is a division. The printer
// parenthesises floor divisions outside brackets so its output always reads back.
#pragma once

#include "ir/Diagnostic.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace unitile {

enum class TokenKind : uint8_t {
  End,
  Newline,
  Ident,
  Int,   // text holds the digits
  Float, // text holds the literal as written
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Colon, Semicolon, Question, QuestionQuestion,
  Plus, Minus, Star, Slash, SlashSlash, Percent,
  Lt, Le, Gt, Ge, EqEq, Ne, Assign, PlusAssign, StarAssign,
  Not, AndAnd, OrOr,
  String, // "text": text holds the contents, escapes resolved (graph attributes)
};

/// How a token kind is spelled in messages: "'('", "end of file", "identifier", ...
std::string token_kind_spelling(TokenKind k);

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text; // exact source text (empty for End and Newline)
  SourceLoc loc;
  size_t offset = 0; // byte offset of the token's first character
};

/// Produces tokens on demand. Errors (unexpected characters, malformed numbers) are
/// UserErrors pointing at the offending text.
class Lexer {
public:
  explicit Lexer(const SourceFile& src) : src_(src), text_(src.text) {}

  Token next();

  /// Reads raw text up to the `}` that balances an already consumed `{`, and consumes
  /// that `}`. Used for `schedule { ... }` blocks, whose contents another layer parses.
  /// `open` is where the block starts, for the "unterminated" message.
  std::string read_braced_raw(SourceLoc open);

private:
  [[noreturn]] void fail(SourceLoc loc, const std::string& msg, const std::string& hint = {},
                         int len = 1) const;
  SourceLoc loc_at(size_t pos) const;
  void skip_blanks_and_comments();
  Token lex_number(size_t start);
  Token lex_string(size_t start);
  bool preceded_by_space(size_t pos) const;

  const SourceFile& src_;
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  int bracket_depth_ = 0; // open ( and [ not yet closed
};

} // namespace unitile
