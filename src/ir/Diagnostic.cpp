// Rendering of user-facing diagnostics and the internal-error hook.
#include "ir/Diagnostic.h"

#include <sstream>

namespace unitile {

std::string SourceFile::line_text(int line) const {
  if (line <= 0) return {};
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return {};
    ++pos;
  }
  size_t end = text.find('\n', pos);
  std::string s = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

std::string Diagnostic::render() const {
  std::ostringstream os;
  if (!file.empty()) {
    os << file << ":";
    if (loc.valid()) os << loc.line << ":" << loc.col << ":";
    os << " ";
  }
  os << "error: " << message << "\n";
  if (!source_line.empty() && loc.valid()) {
    os << "  " << source_line << "\n  ";
    // Keep tabs so the caret lines up under the offending column.
    for (int c = 1; c < loc.col && c - 1 < static_cast<int>(source_line.size()); ++c)
      os << (source_line[c - 1] == '\t' ? '\t' : ' ');
    os << '^';
    for (int i = 1; i < caret_len; ++i) os << '~';
    os << "\n";
  }
  if (!hint.empty()) os << "  hint: " << hint << "\n";
  return os.str();
}

UserError::UserError(std::string message) : std::runtime_error(std::move(message)) {}
UserError::UserError(Diagnostic diag)
    : std::runtime_error(diag.render()), diags_{std::move(diag)} {}

Diagnostic make_diagnostic(const SourceFile& src, SourceLoc loc, std::string message,
                           std::string hint, int caret_len) {
  Diagnostic d;
  d.file = src.name;
  d.loc = loc;
  d.message = std::move(message);
  d.hint = std::move(hint);
  d.source_line = src.line_text(loc.line);
  d.caret_len = caret_len < 1 ? 1 : caret_len;
  return d;
}

[[noreturn]] void internal_fail(const char* file, int line, const std::string& msg) {
  std::ostringstream os;
  os << "internal error at " << file << ":" << line << ": " << msg;
  throw InternalError(os.str());
}

} // namespace unitile
