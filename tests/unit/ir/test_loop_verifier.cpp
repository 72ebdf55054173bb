// The Loop IR verifier: each kind of inconsistency is an InternalError naming the problem.
#include "ir/Loop.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace unitile;

namespace {

LoopProgram program_with(Stmt body) {
  LoopProgram p;
  p.kernel = "K";
  p.buffers = {{"A", DType::F32, {4, 4}, TensorRole::Input},
               {"O", DType::F32, {4}, TensorRole::Output}};
  p.params = {{"alpha", DType::F32, {}}};
  p.funcs = {{"K_0", std::move(body)}};
  return p;
}

Stmt loop(const char* v, int64_t n, Stmt body, ForKind k = ForKind::Serial) {
  return for_loop(v, int_imm(0), int_imm(n), k, std::move(body));
}

std::string verify_error(const LoopProgram& p) {
  try {
    verify(p);
  } catch (const InternalError& e) {
    return e.what();
  }
  ADD_FAILURE() << "verify accepted:\n" << to_string(p);
  return {};
}

#define EXPECT_VERIFY_ERROR(prog, text)                                                    \
  do {                                                                                     \
    std::string msg_ = verify_error(prog);                                                 \
    EXPECT_NE(msg_.find(text), std::string::npos) << msg_;                                 \
  } while (0)

} // namespace

TEST(LoopVerifier, AcceptsAWellFormedProgram) {
  Stmt body = loop("i", 4, loop("j", 4,
                                store("O", {var("i")},
                                      binary(BinaryOp::Mul, access("A", {var("i"), var("j")}, DType::F32),
                                             var("alpha", DType::F32))),
                                ForKind::Vectorized),
                   ForKind::GridX);
  EXPECT_NO_THROW(verify(program_with(body)));
}

TEST(LoopVerifier, UndefinedNames) {
  EXPECT_VERIFY_ERROR(program_with(store("O", {var("i")}, float_imm(0))), "use of undefined variable 'i'");
  EXPECT_VERIFY_ERROR(program_with(loop("i", 4, store("Q", {var("i")}, float_imm(0)))),
                      "store to undefined buffer 'Q'");
  EXPECT_VERIFY_ERROR(program_with(loop("i", 4, store("O", {var("i")}, access("Z", {}, DType::F32)))),
                      "read of undefined buffer 'Z'");
  // An allocation is only visible inside its body.
  Stmt out_of_scope = block({allocate("t", DType::F32, {1}, MemScope::Register, barrier()),
                             store("t", {int_imm(0)}, float_imm(0))});
  EXPECT_VERIFY_ERROR(program_with(out_of_scope), "store to undefined buffer 't'");
}

TEST(LoopVerifier, RanksAndTypes) {
  EXPECT_VERIFY_ERROR(program_with(store("O", {int_imm(0), int_imm(1)}, float_imm(0))),
                      "'O' has rank 1 but is stored with 2 indices");
  EXPECT_VERIFY_ERROR(program_with(store("O", {int_imm(0)}, access("A", {int_imm(0)}, DType::F32))),
                      "'A' has rank 2 but is read with 1 indices");
  EXPECT_VERIFY_ERROR(program_with(store("O", {int_imm(0)}, access("O", {int_imm(0)}, DType::F16))),
                      "read of 'O' is typed f16 but the buffer is f32");
  EXPECT_VERIFY_ERROR(program_with(store("O", {float_imm(0)}, float_imm(0))), "an index of 'O' has type f32");
  EXPECT_VERIFY_ERROR(program_with(for_loop("i", int_imm(0), int_imm(4, DType::I32), ForKind::Serial, barrier())),
                      "the bounds of loop 'i' must be i64");
  EXPECT_VERIFY_ERROR(program_with(store("O", {int_imm(0)}, var("alpha", DType::F64))),
                      "variable 'alpha' is used as f64 but defined as f32");
  EXPECT_VERIFY_ERROR(program_with(loop("i", 4, store("O", {var("i", DType::I32)}, float_imm(0)))),
                      "variable 'i' is used as i32 but defined as i64");
}

TEST(LoopVerifier, NoShadowing) {
  EXPECT_VERIFY_ERROR(program_with(loop("i", 4, let_stmt("i", int_imm(1), barrier()))),
                      "let variable 'i' shadows");
  EXPECT_VERIFY_ERROR(program_with(let_stmt("alpha", int_imm(1), barrier())), "let variable 'alpha' shadows");
  EXPECT_VERIFY_ERROR(program_with(allocate("A", DType::F32, {1}, MemScope::Shared, barrier())),
                      "allocation 'A' shadows");
  EXPECT_VERIFY_ERROR(program_with(loop("i", 4, loop("i", 2, barrier()))), "loop variable 'i' shadows");
}

TEST(LoopVerifier, GridLoopsAreOutermost) {
  EXPECT_VERIFY_ERROR(program_with(loop("i", 4, loop("b", 4, barrier(), ForKind::GridX))),
                      "grid loop 'b' is nested inside a non-grid loop");
  EXPECT_VERIFY_ERROR(program_with(loop("b", 4, loop("c", 4, barrier(), ForKind::GridX), ForKind::GridX)),
                      "binds grid.x a second time");
  EXPECT_VERIFY_ERROR(program_with(for_loop("b", int_imm(0), var("i"), ForKind::GridY, barrier())),
                      "use of undefined variable 'i'");
  Stmt dyn = let_stmt("n", int_imm(4), for_loop("b", int_imm(0), var("n"), ForKind::GridY, barrier()));
  EXPECT_VERIFY_ERROR(program_with(dyn), "grid.y loop 'b' needs a constant extent");
  // Lets and other grid loops may sit above a grid loop.
  Stmt ok = let_stmt("n", int_imm(4), loop("b", 4, loop("c", 2, barrier(), ForKind::GridY), ForKind::GridX));
  EXPECT_NO_THROW(verify(program_with(ok)));
}

TEST(LoopVerifier, ProgramLevelNames) {
  LoopProgram p = program_with(barrier());
  p.buffers.push_back({"O", DType::F32, {1}, TensorRole::Local});
  EXPECT_VERIFY_ERROR(p, "'O' is declared twice");
  LoopProgram q = program_with(barrier());
  q.funcs.push_back({"K_0", barrier()});
  EXPECT_VERIFY_ERROR(q, "func 'K_0' is defined twice");
  LoopProgram r = program_with(barrier());
  r.funcs[0].name = "not-an-identifier";
  EXPECT_VERIFY_ERROR(r, "is not a C identifier");
}
