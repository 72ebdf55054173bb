// The public C++ API: what an embedding program includes to load a .ut file, open a
// device, and run kernels on host tensors.
//
//   #include <unitile/unitile.h>
//
//   unitile::Module m = unitile::load_module("matmul.ut");
//   const unitile::Kernel& k = *m.find("MatrixMul");
//   unitile::Session s(unitile::open_device("cpu"),
//                      std::make_shared<unitile::KernelCache>(unitile::KernelCache::default_dir()));
//   unitile::ShapeBindings b = unitile::bind_shapes(k, {}, {{"M", 64}, {"K", 32}, {"N", 16}});
//   auto inputs = unitile::complete_inputs(k, b, {{"A", unitile::read_npy("a.npy")}}, /*seed=*/0);
//   unitile::RunResult r = s.run(*s.compile(k, b), inputs, {});
//   unitile::write_npy("c.npy", r.outputs.at("C"));
//
// Errors in the caller's input throw unitile::UserError (with diagnostics where there is
// a source location); compiler bugs throw unitile::InternalError.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"
#include "ir/Kernel.h"
#include "ir/Parser.h"
#include "ir/Type.h"
#include "runtime/Device.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/KernelCache.h"
#include "runtime/Npy.h"
#include "runtime/OutputCheck.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "runtime/Tensor.h"
#include "schedule/Lower.h"
