// The profiler from Python: unitile._core.Profiler wraps profile::Profiler one to one, and
// hands its events and devices to Python as plain dicts (the package's `tl.profile()`
// turns them into its own records).
#include "Bindings.h"

#include "profile/Profiler.h"

#include <nanobind/stl/string.h>

namespace unitile::python {

namespace {

nb::dict device_dict(const profile::ProfiledDevice& d) {
  nb::dict out;
  out["label"] = d.label;
  out["name"] = d.name;
  out["ordinal"] = d.ordinal;
  out["hcd"] = d.hcd.name;
  return out;
}

nb::tuple dims(const std::array<uint32_t, 3>& v) {
  return nb::make_tuple(v[0], v[1], v[2]);
}

nb::dict event_dict(const profile::ProfileEvent& e, const std::vector<profile::ProfiledDevice>& devices) {
  nb::dict out;
  out["device"] = devices.at(static_cast<size_t>(e.device)).label;
  out["queue"] = e.queue;
  out["name"] = e.name;
  out["func"] = e.func;
  out["shapes"] = e.shapes;
  out["call"] = e.call;
  out["start_us"] = e.start_us;
  out["duration_us"] = e.duration_us;
  out["bytes"] = e.bytes;
  out["operations"] = e.operations ? nb::cast(*e.operations) : nb::none();
  out["dtype"] = std::string(dtype_name(e.dtype));
  out["grid"] = dims(e.grid);
  out["block"] = dims(e.block);
  return out;
}

} // namespace

void bind_profile(nb::module_& m) {
  using profile::Profiler;
  nb::class_<Profiler>(m, "Profiler",
                       "Records one device-timed event per kernel launch while active (one active per process)")
      .def(nb::init<>())
      .def("start", &Profiler::start,
           "Become the active profiler (unitile.Error if another one is); a restart continues the recording")
      .def("stop", &Profiler::stop, "Stop recording; the events stay")
      .def_prop_ro("active", &Profiler::active, "whether this profiler is the one recording now")
      .def("clear", &Profiler::clear, "Drop every event and device; the clock restarts at the next start")
      .def(
          "events",
          [](const Profiler& p) {
            // Devices after events: an event never names a device registered after it.
            std::vector<profile::ProfileEvent> events = p.events();
            std::vector<profile::ProfiledDevice> devices = p.devices();
            nb::list out;
            for (const profile::ProfileEvent& e : events) out.append(event_dict(e, devices));
            return out;
          },
          "The launches recorded, in order, as dicts")
      .def(
          "devices",
          [](const Profiler& p) {
            nb::list out;
            for (const profile::ProfiledDevice& d : p.devices()) out.append(device_dict(d));
            return out;
          },
          "The devices the events ran on, as dicts (label is DEVICE-ORDINAL)")
      .def("table", &Profiler::table, "The per-device tables, as `unitile profile` prints them")
      .def("timeline", &Profiler::timeline, "The timeline, one line per device")
      .def("export_chrome_trace", &Profiler::export_chrome_trace, nb::arg("path"),
           "Write the Chrome Trace Event JSON (Perfetto, chrome://tracing)")
      .def("export_html", &Profiler::export_html, nb::arg("path"),
           "Write the self-contained HTML report (timelines, table, roofline)");
}

} // namespace unitile::python
