// Uses an installed Unitile as a library: a MatrixMul built with the C++ builder runs on
// the cpu device and is compared with the same kernel on sim. Prints "consumer: ok".
#include <unitile/builder.h>
#include <unitile/unitile.h>

#include <cstdlib>
#include <iostream>

namespace b = unitile::builder;

int main() {
  b::Kernel k("MatrixMul");
  b::Size M = k.size("M"), K = k.size("K"), N = k.size("N");
  b::Tensor A = k.input("A", unitile::DType::F32, {M, K}), B = k.input("B", unitile::DType::F32, {K, N});
  b::Tensor C = k.output("C", unitile::DType::F32, {M, N});
  b::Index i("i"), j("j"), kk("k");
  C(i, j) += A(i, kk) * B(kk, j);
  const unitile::Kernel kernel = k.build();

  // A program linking Unitile statically finds plugins through UNITILE_PLUGIN_PATH;
  // the package config says where the installed ones are.
  setenv("UNITILE_PLUGIN_PATH", UNITILE_PLUGIN_DIR, /*overwrite=*/0);
  try {
    auto cache = std::make_shared<unitile::KernelCache>(unitile::KernelCache::default_dir());
    unitile::Session cpu(unitile::open_device("cpu"), cache);
    unitile::Session sim(unitile::open_device("sim"), cache);
    const unitile::ShapeBindings shapes = unitile::bind_shapes(kernel, {}, {{"M", 17}, {"K", 33}, {"N", 9}});
    const auto inputs = unitile::complete_inputs(kernel, shapes, {}, /*seed=*/7);
    const unitile::RunResult got = cpu.run(*cpu.compile(kernel, shapes), inputs, {});
    const unitile::RunResult ref = sim.run(*sim.compile(kernel, shapes), inputs, {});
    const unitile::CheckReport report = unitile::compare_outputs({"C"}, got.outputs, ref.outputs, 33);
    std::cout << report.message() << "\n";
    if (!report.ok()) return 1;
  } catch (const unitile::UserError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::cout << "consumer: ok\n";
  return 0;
}
