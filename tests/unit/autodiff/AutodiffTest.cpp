// Graph reverse mode: which gradient each node gets (derived `vjp` or the registered
// `<op>_grad`), cotangent sums, zeros, seeds and the errors; and the differentiator's
// refusals. The numbers are checked from Python against finite differences.
#include "graph/Autodiff.h"
#include "graph/DeriveVjp.h"
#include "graph/GraphKernel.h"
#include "ir/Diagnostic.h"
#include "ops/OpLibrary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace unitile::graph {
namespace {

using ::testing::HasSubstr;

ops::TensorSpec f32(std::vector<int64_t> shape) {
  return {DType::F32, std::move(shape)};
}

std::vector<std::string> ops_after(const Graph& g, size_t first) {
  std::vector<std::string> out;
  for (size_t i = first; i < g.nodes().size(); ++i)
    out.push_back(g.nodes()[i].op);
  return out;
}

TEST(Autodiff, ContractionIsDerivedSoftmaxUsesItsRegisteredGradient) {
  Graph g;
  const ValueId a = g.add_input("A", f32({2, 3})), b = g.add_input("B", f32({3, 4}));
  const ValueId y = g.add_node("matmul", {a, b}, {}, "m.py:1")[0];
  const ValueId s = g.add_node("softmax", {y}, {{"axis", int64_t{1}}}, "m.py:2")[0];
  const ValueId loss = g.add_node("reduce_sum", {s}, {{"keepdims", int64_t{0}}}, "m.py:3")[0];
  const size_t forward = g.nodes().size();
  const std::vector<ValueId> grads = append_gradients(g, loss, {a, b});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(g.value(grads[0]).type, f32({2, 3}));
  EXPECT_EQ(g.value(grads[1]).type, f32({3, 4}));
  // The seed, then reduce_sum (derived), softmax (registered), matmul (derived, both inputs).
  EXPECT_THAT(ops_after(g, forward),
              ::testing::ElementsAre("constant", "vjp", "softmax_grad", "vjp"));
  const Node& mm = g.nodes().back();
  EXPECT_EQ(std::get<std::string>(mm.attrs.at("op")), "matmul");
  EXPECT_EQ(std::get<std::string>(mm.attrs.at("wrt")), "A,B");
  EXPECT_EQ(mm.where, "m.py:1");
  g.set_outputs(grads);
  EXPECT_THAT(graph_kernel(g, "grads").text, HasSubstr("+= "));
}

TEST(Autodiff, GradientOfAGradientDifferentiatesTheVjpNodes) {
  // loss2 = sum(dloss/dA ^ 2) for loss = sum(tanh(A @ B)): the second pass meets the
  // first pass's vjp nodes (matmul's, whose dA does not read A) and differentiates them.
  Graph g;
  const ValueId a = g.add_input("A", f32({2, 3})), b = g.add_input("B", f32({3, 4}));
  const ValueId t = g.add_node("tanh", {g.add_node("matmul", {a, b}, {}, "")[0]}, {}, "")[0];
  const ValueId loss = g.add_node("reduce_sum", {t}, {{"keepdims", int64_t{0}}}, "")[0];
  const std::vector<ValueId> first = append_gradients(g, loss, {a});
  const ValueId loss2 =
      g.add_node("reduce_sum", {g.add_node("mul", {first[0], first[0]}, {}, "")[0]},
                 {{"keepdims", int64_t{0}}}, "")[0];
  const size_t before = g.nodes().size();
  const std::vector<ValueId> second = append_gradients(g, loss2, {a, b});
  bool vjp_of_vjp = false;
  for (size_t i = before; i < g.nodes().size(); ++i)
    vjp_of_vjp = vjp_of_vjp || (g.nodes()[i].op == "vjp" &&
                                std::get<std::string>(g.nodes()[i].attrs.at("op")) == "vjp");
  EXPECT_TRUE(vjp_of_vjp);
  EXPECT_EQ(g.value(second[0]).type, f32({2, 3}));
  EXPECT_EQ(g.value(second[1]).type, f32({3, 4}));
  g.set_outputs(second);
  EXPECT_NO_THROW(graph_kernel(g, "second"));
}

TEST(Autodiff, ValueUsedTwiceGetsTheSumAndAnUnusedInputZeros) {
  Graph g;
  const ValueId x = g.add_input("X", f32({3})), w = g.add_input("W", f32({3}));
  const ValueId sq = g.add_node("mul", {x, x}, {}, "")[0];
  const ValueId loss = g.add_node("reduce_sum", {g.add_node("exp", {sq}, {}, "")[0]},
                                  {{"keepdims", int64_t{0}}}, "")[0];
  const size_t forward = g.nodes().size();
  const std::vector<ValueId> grads = append_gradients(g, loss, {x, w});
  // mul's one vjp node gives dA and dB, both for X: one add sums them.
  EXPECT_THAT(ops_after(g, forward),
              ::testing::ElementsAre("constant", "vjp", "vjp", "vjp", "add", "constant", "expand"));
  EXPECT_EQ(g.nodes()[static_cast<size_t>(g.value(grads[0]).producer)].op, "add");
  EXPECT_EQ(g.nodes()[static_cast<size_t>(g.value(grads[1]).producer)].op, "expand");
}

TEST(Autodiff, AddPassesItsCotangentThrough) {
  Graph g;
  const ValueId x = g.add_input("X", f32({2, 3})), b = g.add_input("B", f32({3}));
  const ValueId y = g.add_node("add", {x, b}, {}, "")[0];
  const ValueId loss = g.add_node("reduce_sum", {g.add_node("tanh", {y}, {}, "")[0]},
                                  {{"keepdims", int64_t{0}}}, "")[0];
  const size_t forward = g.nodes().size();
  const std::vector<ValueId> grads = append_gradients(g, loss, {x, b});
  // dX is tanh's vjp output itself; only the broadcast B needs a node (a sum over rows).
  EXPECT_THAT(ops_after(g, forward), ::testing::ElementsAre("constant", "vjp", "vjp", "vjp"));
  EXPECT_EQ(g.nodes()[static_cast<size_t>(g.value(grads[0]).producer)].attrs.at("op"),
            ops::AttrValue{std::string("tanh")});
  EXPECT_EQ(std::get<std::string>(g.nodes().back().attrs.at("wrt")), "B");
}

TEST(Autodiff, SeedAndIndexInputs) {
  Graph g;
  const ValueId idx = g.add_input("Idx", {DType::I64, {2}});
  const ValueId w = g.add_input("W", f32({5, 3}));
  const ValueId seed = g.add_input("Seed", f32({}));
  const ValueId e = g.add_node("embedding", {idx, w}, {}, "")[0];
  const ValueId loss = g.add_node("reduce_mean", {e}, {{"keepdims", int64_t{0}}}, "")[0];
  const size_t forward = g.nodes().size();
  const std::vector<ValueId> grads = append_gradients(g, loss, {w}, seed);
  // No constant seed: the given one; embedding's gradient is registered (a gather).
  EXPECT_THAT(ops_after(g, forward), ::testing::ElementsAre("vjp", "embedding_grad"));
  EXPECT_EQ(g.value(grads[0]).type, f32({5, 3}));
  EXPECT_THROW(append_gradients(g, loss, {idx}), UserError);
}

TEST(Autodiff, Errors) {
  Graph g;
  const ValueId x = g.add_input("X", f32({3}));
  // reduce_prod's '*=' cannot be derived from its kernel: its registered gradient is used.
  const ValueId p = g.add_node("reduce_prod", {x}, {{"keepdims", int64_t{0}}}, "model.py:7")[0];
  const size_t forward = g.nodes().size();
  append_gradients(g, p, {x});
  EXPECT_THAT(ops_after(g, forward), ::testing::Contains("reduce_prod_grad"));
  // scatter_elements with reduction max: underivable, and its gradient op refuses 'max'.
  const ValueId idx = g.add_input("Idx", {DType::I64, {2}});
  const ValueId u = g.add_input("U", f32({2}));
  const ValueId sc = g.add_node("scatter_elements", {x, idx, u}, {{"reduction", std::string("max")}},
                                "model.py:9")[0];
  const ValueId total = g.add_node("reduce_sum", {sc}, {{"keepdims", int64_t{0}}}, "")[0];
  try {
    append_gradients(g, total, {u});
    FAIL() << "scatter_elements with reduction max has no gradient";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("reduction 'max'"));
  }
  const ValueId y = g.add_node("exp", {x}, {}, "")[0];
  EXPECT_THROW(append_gradients(g, y, {x}), UserError); // not a single value
  const ValueId s = g.add_node("reduce_sum", {y}, {{"keepdims", int64_t{0}}}, "")[0];
  const ValueId bad_seed = g.add_input("S", {DType::F64, {}});
  EXPECT_THROW(append_gradients(g, s, {x}, bad_seed), UserError);
}

TEST(DeriveVjp, MatmulAndRefusals) {
  const ops::OpInstance mm =
      ops::instantiate(ops::op_or_error("matmul"), {{"A", f32({2, 3})}, {"B", f32({3, 4})}}, {});
  const VjpDerivation d = derive_vjp(mm.kernel(), {{"Y"}, {"A"}, {}, {}, ""});
  ASSERT_TRUE(d.vjp) << d.why_not;
  EXPECT_THAT(d.vjp->text, HasSubstr("dA[m, k] += dY[m, n] * B[k, n]"));
  EXPECT_THAT(d.vjp->text, ::testing::Not(HasSubstr("dB")));
  EXPECT_EQ(d.vjp->gradient_outputs.at("A"), "dA");
  const ops::OpInstance sm =
      ops::instantiate(ops::op_or_error("softmax"), {{"X", f32({2, 3})}}, {});
  const VjpDerivation r = derive_vjp(sm.kernel(), {{"Y"}, {"X"}, {}, {}, ""});
  EXPECT_FALSE(r.vjp);
  EXPECT_THAT(r.why_not, HasSubstr("'max=' reduction"));
  EXPECT_THROW(derive_vjp(mm.kernel(), {{"Y"}, {"Q"}, {}, {}, ""}), UserError);
}

} // namespace
} // namespace unitile::graph
