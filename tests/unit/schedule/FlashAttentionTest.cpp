// Tests of the flash-attention fusion: which chains match (and which near misses do not),
// what the fused program keeps, and the primitive's text and JSON forms.
#include "hcd/Hcd.h"
#include "ir/Parser.h"
#include "schedule/ApplySchedule.h"
#include "schedule/AutoSchedule.h"
#include "schedule/FlashAttention.h"
#include "schedule/Schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace unitile {
namespace {

using ::testing::HasSubstr;

// A kernel with the given four statements over Q, K, V: f32[H,N,D], O: f32[H,N,D].
Kernel attention(const std::string& statements, const std::string& extra_inputs = "") {
  std::string text = "kernel A {\n  input: f32[H,N,D] Q, f32[H,N,D] K, f32[H,N,D] V" + extra_inputs +
                     "\n  output: f32[H,N,D] O\n  local: f32[H,N,N] S, f32[H,N] m, f32[H,N] l\n"
                     "  operation:\n" +
                     statements + "}\n";
  return parse_module(SourceFile{"test.ut", text}).kernels.at(0);
}

const std::string kScores = "    S[h,i,j] += Q[h,i,e] * K[h,j,e] * rsqrt(f32(D))\n";
const ShapeBindings kShape{{"H", 2}, {"N", 37}, {"D", 20}};

TEST(FlashAttention, MatchesPlainAndCausalChains) {
  Kernel plain = attention(kScores + "    m[h,i] max= S[h,i,j]\n    l[h,i] += exp(S[h,i,j] - m[h,i])\n"
                                     "    O[h,i,e] += exp(S[h,i,j] - m[h,i]) / l[h,i] * V[h,j,e]\n");
  auto sites = attention_sites(plain, kShape);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].output, "O");
  EXPECT_EQ(sites[0].batch, std::vector<int64_t>{2});
  EXPECT_EQ(sites[0].queries, 37);
  EXPECT_EQ(sites[0].head_dim, 20);
  EXPECT_FALSE(sites[0].masked);

  Kernel causal = attention(kScores + "    m[h,i] max= j < i ? S[h,i,j] : -inf\n"
                                      "    l[h,i] += j < i ? exp(S[h,i,j] - m[h,i]) : 0\n"
                                      "    O[h,i,e] += V[h,j,e] * (j < i ? exp(S[h,i,j] - m[h,i]) / l[h,i] : 0)\n");
  sites = attention_sites(causal, kShape);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_TRUE(sites[0].masked);
  ASSERT_TRUE(sites[0].causal_offset.has_value());
  EXPECT_EQ(*sites[0].causal_offset, -1); // j < i is j <= i - 1
}

TEST(FlashAttention, NearMissesDoNotMatch) {
  // The row sum is unmasked while the max and output are masked.
  Kernel mixed = attention(kScores + "    m[h,i] max= j <= i ? S[h,i,j] : -inf\n"
                                     "    l[h,i] += exp(S[h,i,j] - m[h,i])\n"
                                     "    O[h,i,e] += (j <= i ? exp(S[h,i,j] - m[h,i]) / l[h,i] : 0) * V[h,j,e]\n");
  EXPECT_TRUE(attention_sites(mixed, kShape).empty());
  // The max is masked with 0 instead of -inf (a different m, not the softmax's).
  Kernel zero = attention(kScores + "    m[h,i] max= j <= i ? S[h,i,j] : 0\n"
                                    "    l[h,i] += j <= i ? exp(S[h,i,j] - m[h,i]) : 0\n"
                                    "    O[h,i,e] += (j <= i ? exp(S[h,i,j] - m[h,i]) / l[h,i] : 0) * V[h,j,e]\n");
  EXPECT_TRUE(attention_sites(zero, kShape).empty());
  // exp(S - m) without the division by l.
  Kernel unnormalised = attention(kScores + "    m[h,i] max= S[h,i,j]\n    l[h,i] += exp(S[h,i,j] - m[h,i])\n"
                                            "    O[h,i,e] += exp(S[h,i,j] - m[h,i]) * V[h,j,e]\n");
  EXPECT_TRUE(attention_sites(unnormalised, kShape).empty());
  // The explicit primitive on it says why.
  Schedule s;
  Primitive fa;
  fa.kind = PrimitiveKind::FlashAttention;
  fa.buffer = "O";
  s.primitives.push_back(fa);
  try {
    lower_scheduled(unnormalised, kShape, hcd::builtin("sim"), s);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("flash_attention O: not an attention chain: the output is not"));
  }
}

TEST(FlashAttention, FusedProgramDropsTheScores) {
  Kernel k = attention(kScores + "    m[h,i] max= S[h,i,j]\n    l[h,i] += exp(S[h,i,j] - m[h,i])\n"
                                 "    O[h,i,e] += exp(S[h,i,j] - m[h,i]) / l[h,i] * V[h,j,e]\n");
  AutoSchedule a = auto_schedule(k, kShape, hcd::builtin("sim"));
  ASSERT_FALSE(a.schedule.empty());
  EXPECT_EQ(a.schedule.primitives[0].kind, PrimitiveKind::FlashAttention);
  LoopProgram p = lower_scheduled(k, kShape, hcd::builtin("sim"), a.schedule);
  ASSERT_EQ(p.funcs.size(), 1u);
  for (const LoopBuffer& b : p.buffers) EXPECT_TRUE(b.name != "S" && b.name != "m" && b.name != "l") << b.name;
}

TEST(FlashAttention, TextAndJsonRoundTrip) {
  Schedule s = parse_schedule("flash_attention O rows 24 keys 32\n", "t", SourceLoc{1, 1});
  ASSERT_EQ(s.primitives.size(), 1u);
  EXPECT_EQ(s.primitives[0].kind, PrimitiveKind::FlashAttention);
  EXPECT_EQ(s.primitives[0].factors, (std::vector<int64_t>{24, 32}));
  EXPECT_EQ(to_text(s), "flash_attention O rows 24 keys 32\n");
  EXPECT_EQ(to_text(schedule_from_json(to_json(s), "t")), to_text(s));
  EXPECT_EQ(to_text(parse_schedule("flash_attention O", "t", SourceLoc{1, 1})), "flash_attention O\n");
  EXPECT_THROW(parse_schedule("flash_attention O rows 24", "t", SourceLoc{1, 1}), UserError);
  Schedule t = parse_schedule("flash_attention O rows 64 keys 32 threads 16 16\n", "t", SourceLoc{1, 1});
  EXPECT_EQ(t.primitives.at(0).factors, (std::vector<int64_t>{64, 32, 16, 16}));
  EXPECT_EQ(to_text(t), "flash_attention O rows 64 keys 32 threads 16 16\n");
  EXPECT_EQ(to_text(schedule_from_json(to_json(t), "t")), to_text(t));
  EXPECT_THROW(parse_schedule("flash_attention O rows 64 keys 32 threads 16", "t", SourceLoc{1, 1}), UserError);
}

// On an HCD with blocks of SIMT threads the auto-scheduler picks the SIMT form (threads in
// the primitive, thread loops, shared tiles and barriers in the launch); sim keeps the CPU
// shape. The arithmetic is checked on sim in tests/lit/diff/gpu-schedules.ut.
TEST(FlashAttention, SimtBlocksWhereTheHcdHasThem) {
  Kernel k = attention(kScores + "    m[h,i] max= j <= i ? S[h,i,j] : -inf\n"
                                 "    l[h,i] += j <= i ? exp(S[h,i,j] - m[h,i]) : 0\n"
                                 "    O[h,i,e] += (j <= i ? exp(S[h,i,j] - m[h,i]) / l[h,i] : 0) * V[h,j,e]\n");
  const ShapeBindings shape{{"H", 32}, {"N", 1024}, {"D", 64}};
  const hcd::Hcd h200 = hcd::builtin("nvidia-h200");
  std::optional<FlashThreads> t = flash_threads(k, shape, "O", h200);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->rows, 64);
  EXPECT_EQ(t->keys, 32);
  EXPECT_EQ(t->threads_y * t->threads_x, 256);
  std::string why;
  EXPECT_FALSE(flash_threads(k, shape, "O", hcd::builtin("sim"), &why));
  EXPECT_THAT(why, HasSubstr("does not run blocks of SIMT threads"));

  AutoSchedule a = auto_schedule(k, shape, h200);
  ASSERT_EQ(a.schedule.primitives.size(), 1u) << to_text(a.schedule);
  EXPECT_EQ(a.schedule.primitives[0].kind, PrimitiveKind::FlashAttention);
  EXPECT_EQ(a.schedule.primitives[0].factors, (std::vector<int64_t>{64, 32, 16, 16}));
  LoopProgram p = lower_scheduled(k, shape, h200, a.schedule);
  ASSERT_EQ(p.funcs.size(), 1u);
  const std::string text = to_string(p);
  EXPECT_THAT(text, HasSubstr("thread.x"));
  EXPECT_THAT(text, HasSubstr("barrier"));
  EXPECT_THAT(text, HasSubstr("K_shared: f32[32, 65] shared"));
  EXPECT_THAT(text, HasSubstr("O_acc: f32[16, 16, 4, 4] register"));

  AutoSchedule cpu = auto_schedule(k, shape, hcd::builtin("sim"));
  EXPECT_EQ(cpu.schedule.primitives.at(0).factors.size(), 2u);
}

} // namespace
} // namespace unitile
