// Bad inputs: each gives one UserError with the right position, unitile-opt exits with
// status 1 on them, and random mutations of valid files never crash the front end.
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>

using namespace unitile;

namespace {

Diagnostic first_error(const std::string& text) {
  try {
    parse_module(SourceFile{"bad.ut", text});
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u);
    if (!e.diagnostics().empty()) return e.diagnostics()[0];
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

const char* kValid = R"(kernel MatrixMul {
  input:  float[M,K] A, float[K,N] B
  output: float[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}
kernel Conv {
  input:  f32[N,C,H] I, f32[F,C,R] Wt
  output: f32[N,F,(H-R)//T+1] O, bool[N] Z
  local:  f32[N] m
  param:  f32 eps
  operation:
    O[n,f,y] += (I[n,c,y*T+r] ?? 0) * Wt[f,c,r] + eps
    m[n] max= i32(I[n,c,0]) > 0 ? exp(I[n,c,0]) : -inf
    Z[n] = m[n] != 0.5 && !isnan(m[n])
}
schedule { tile n 4; }
)";

TEST(ParserErrors, PositionsAndMessages) {
  struct Case {
    std::string text;
    int line, col;
    std::string message;
  };
  const Case cases[] = {
      {"kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = C[i]\n}\n", 4, 21,
       "unknown tensor 'C'"},
      {"kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = A[i, j]\n}\n", 4, 21,
       "tensor 'A' has rank 1 but is indexed with 2 indices"},
      {"kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = A[i] +\n}\n", 4, 27,
       "expected an expression, got end of line"},
      {"kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = A[i]\n}\nkernel K {\n}\n", 6, 8,
       "duplicate kernel name 'K'"},
      {"kernel K {\n  input: f32[M] A\n  output: f32[N] B\n  operation: B[i] = A[i]\n}\n", 4, 23,
       "conflicting extents for index 'i': N (B dimension 0) vs M (A dimension 0)"},
      {"kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = A[i] \x01\n}\n", 4, 26,
       "unexpected byte 0x01"},
      {"", 0, 0, ""}, // an empty file is an empty module, not an error
  };
  for (const Case& c : cases) {
    if (c.message.empty()) {
      EXPECT_TRUE(parse_module(SourceFile{"empty.ut", c.text}).kernels.empty());
      continue;
    }
    Diagnostic d = first_error(c.text);
    EXPECT_EQ(d.message, c.message);
    EXPECT_EQ(d.loc.line, c.line) << c.message;
    EXPECT_EQ(d.loc.col, c.col) << c.message;
    EXPECT_EQ(d.file, "bad.ut");
    EXPECT_NE(d.render().find("bad.ut:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: "),
              std::string::npos);
  }
}

TEST(ParserErrors, DeepInputsAreErrorsNotCrashes) {
  std::string deep = "kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = " +
                     std::string(100000, '(') + "A[i]" + std::string(100000, ')') + "\n}\n";
  EXPECT_NE(first_error(deep).message.find("nested too deeply"), std::string::npos);
  std::string negs = "kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = " +
                     std::string(100000, '!') + "A[i]\n}\n";
  EXPECT_NE(first_error(negs).message.find("nested too deeply"), std::string::npos);
  std::string chain = "kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = A[i]";
  for (int i = 0; i < 50000; ++i) chain += " + A[i]";
  chain += "\n}\n";
  EXPECT_NE(first_error(chain).message.find("too deep"), std::string::npos);
}

TEST(ParserErrors, UnitileOptExitsWithStatusOne) {
  std::filesystem::path opt = std::filesystem::path(UNITILE_BIN_DIR) / "unitile-opt";
  if (!std::filesystem::exists(opt)) GTEST_SKIP() << opt << " is not built";
  auto dir = std::filesystem::temp_directory_path() / ("unitile-parser-errors-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const char* bad[] = {
      "kernel K {\n  input: f32[N] A\n  output: f32[N] B\n  operation: B[i] = C[i]\n}\n",
      "kernel K {\n",
      "kernel K { input: f32[N] A output: f32[N] B }",
      "\xff\xfe garbage",
  };
  int n = 0;
  for (const char* text : bad) {
    auto file = dir / ("bad" + std::to_string(n++) + ".ut");
    std::ofstream(file) << text;
    std::string cmd = opt.string() + " " + file.string() + " > /dev/null 2>&1";
    int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << text;
    EXPECT_EQ(WEXITSTATUS(status), 1) << text;
  }
  auto good = dir / "good.ut";
  std::ofstream(good) << kValid;
  int status = std::system((opt.string() + " " + good.string() + " > /dev/null 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::filesystem::remove_all(dir);
}

TEST(ParserFuzz, MutationsOnlyEverThrowUserError) {
  ASSERT_NO_THROW(parse_module(SourceFile{"valid.ut", kValid}));
  const std::string alphabet = "()[]{}<>=!?:;,.+-*/%&|^@#$ \n\t0123456789eE_aAiIjkKMNxyz\"'\\\x01\xff";
  const char* tokens[] = {"kernel", "input:", "output:", "local:", "param:", "operation:", "schedule",
                          "??", "//", "max=", "+=", "inf", "nan", "true", "f16", "exp(", "]", "[", "\n"};
  std::mt19937 rng(12345);
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = kValid;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t pos = rng() % s.size();
      switch (rng() % 5) {
      case 0: s[pos] = alphabet[rng() % alphabet.size()]; break;
      case 1: s.erase(pos, 1 + rng() % 8); break;
      case 2: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      case 3: s.insert(pos, tokens[rng() % std::size(tokens)]); break;
      case 4: s = s.substr(0, pos); break;
      }
    }
    try {
      Module m = parse_module(SourceFile{"fuzz.ut", s});
      // Whatever parses must print to text that parses back to the same module.
      std::string printed = to_string(m);
      Module again = parse_module(SourceFile{"fuzz2.ut", printed});
      ASSERT_TRUE(equal(m, again)) << s << "\n----\n" << printed;
      ASSERT_EQ(to_string(again), printed);
      ++accepted;
    } catch (const UserError& e) {
      ASSERT_FALSE(e.diagnostics().empty()) << s;
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "non-user error " << e.what() << " for input:\n" << s;
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

} // namespace
