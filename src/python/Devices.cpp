// Devices from Python: the plugins found on the search path and whether each can run.
#include "Bindings.h"

#include "runtime/DeviceRegistry.h"
#include "runtime/KernelCache.h"
#include "tune/TuningDatabase.h"
#include "tune/TunedLookup.h"

#include <map>
#include <mutex>

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace unitile::python {

std::shared_ptr<PyDevice> device_named(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<PyDevice>> opened;
  static auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  std::lock_guard lock(mu);
  if (auto it = opened.find(name); it != opened.end()) return it->second;
  auto session = std::make_shared<Session>(open_device(name), cache);
  // As for `unitile run`: the best schedule recorded by `unitile tune` for a kernel's
  // tuning key (the database of $UNITILE_TUNING_DB or the cache dir) before the
  // auto-scheduler's.
  session->set_schedule_lookup(tuning_database_lookup(TuningDatabase::default_path()));
  auto d = std::make_shared<PyDevice>(PyDevice{name, std::move(session)});
  opened.emplace(name, d);
  return d;
}

void bind_devices(nb::module_& m) {
  nb::class_<DeviceListing>(m, "DeviceListing", "One device plugin found on the search path")
      .def_ro("name", &DeviceListing::name)
      .def_ro("path", &DeviceListing::path)
      .def_ro("summary", &DeviceListing::summary, "its HCD in one line, when it loaded")
      .def_ro("error", &DeviceListing::error, "why the plugin did not load, else empty")
      .def_ro("unavailable", &DeviceListing::unavailable,
              "why it loads but cannot run kernels here (no driver or hardware), else empty")
      .def("__repr__", [](const DeviceListing& l) {
        return "<DeviceListing " + l.name + (l.error.empty() && l.unavailable.empty() ? "" : " (unusable)") + ">";
      });
  nb::class_<PyDevice>(m, "Device", "A device opened by name, with its compiler session")
      .def_ro("name", &PyDevice::name)
      .def_prop_ro("hcd", [](const PyDevice& d) { return d.session->device().hcd().name; }, "its HCD's name")
      .def_prop_ro("shares_host_memory", [](const PyDevice& d) { return d.session->device().shares_host_memory(); },
                   "whether its buffers are host memory (tensors then move to and from NumPy without copies)")
      .def("__repr__", [](const PyDevice& d) { return "<unitile device " + d.name + ">"; });
  m.def("device", &device_named, nb::arg("name"), "The device named `name`, opened once per process");
  m.def("list_devices", &list_devices, "Every device plugin found, with its HCD summary or why it cannot run");
  m.def("plugin_search_path", &plugin_search_path, "The folders searched for device plugins, in order");
}

} // namespace unitile::python
