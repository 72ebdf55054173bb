// unitile._core: the C++ engine as a Python extension. The Python package (python/unitile)
// is a thin layer over it; everything that compiles or runs lives on this side.
#include "Bindings.h"

#include "ir/Diagnostic.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "Unitile's runtime: devices, device tensors, kernels (see the unitile package)";
  // The user's mistakes (bad shapes, dtypes, kernel text) are unitile.Error, a ValueError;
  // anything else escaping the engine is a bug and stays a RuntimeError.
  static nb::exception<unitile::UserError> user_error(m, "Error", PyExc_ValueError);
  unitile::python::bind_devices(m);
  unitile::python::bind_arrays(m);
  unitile::python::bind_kernels(m);
  unitile::python::bind_graphs(m);
  unitile::python::bind_train(m);
  unitile::python::bind_profile(m);
}
