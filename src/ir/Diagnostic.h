// Source locations and user-facing errors: `FILE:LINE:COL: error: MESSAGE`, the offending
// line with a caret, and an optional hint.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace unitile {

struct SourceLoc {
  int line = 0; // 1-based; 0 means "no location"
  int col = 0;  // 1-based
  bool valid() const { return line > 0; }
};

/// A source buffer with its file name, so diagnostics can quote the offending line.
struct SourceFile {
  std::string name; // as given on the command line, e.g. "examples/matmul.ut"
  std::string text;
  std::string line_text(int line) const;
};

/// One user-facing diagnostic. `render()` gives the full multi-line text:
///   FILE:LINE:COL: error: MESSAGE
///     <offending line>
///          ^
///   hint: HINT
struct Diagnostic {
  std::string file;
  SourceLoc loc;
  std::string message;
  std::string hint;        // empty when there is none
  std::string source_line; // the offending line, empty when unknown
  int caret_len = 1;       // how many columns the caret underlines
  std::string render() const;
};

/// Thrown for errors in the user's input (Halide's user_error): malformed IR, wrong
/// shapes, a broken HCD file, a missing device. The `unitile` command turns it into
/// exit status 1. It never crosses the C device ABI.
class UserError : public std::runtime_error {
public:
  explicit UserError(std::string message);
  explicit UserError(Diagnostic diag);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

private:
  std::vector<Diagnostic> diags_;
};

/// Thrown when the compiler itself is wrong (Halide's internal_assert). Exit status 2.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

/// Build a diagnostic pointing into `src` at `loc`.
Diagnostic make_diagnostic(const SourceFile& src, SourceLoc loc, std::string message,
                           std::string hint = {}, int caret_len = 1);

[[noreturn]] void internal_fail(const char* file, int line, const std::string& msg);

} // namespace unitile

#define UT_INTERNAL_ASSERT(cond, msg)                                                   \
  do {                                                                                  \
    if (!(cond)) ::unitile::internal_fail(__FILE__, __LINE__, std::string(#cond ": ") + (msg)); \
  } while (0)
