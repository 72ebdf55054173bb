// Building the self-contained HTML report.
#include "profile/HtmlReport.h"

#include "profile/Summary.h"
#include "profile/Timeline.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace unitile::profile {
namespace {

// The page's script: reads the JSON in #profile-data and draws into #report.
constexpr std::string_view kScript = R"JS(
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("profile-data").textContent);
  const report = document.getElementById("report");
  const rendered = document.getElementById("rendered-kernels");
  const SVG = "http://www.w3.org/2000/svg";
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svg = (tag, attrs, text) => {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                   "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  const colorOf = {};
  const color = (name) => {
    if (!(name in colorOf)) colorOf[name] = palette[Object.keys(colorOf).length % palette.length];
    return colorOf[name];
  };
  const fmt = (x, d) => (x === null || x === undefined) ? "-" : Number(x).toFixed(d);

  function drawTimeline(dev, parent) {
    const events = data.events.filter((e) => e.device === dev.index);
    if (!events.length) return;
    const t0 = Math.min(...events.map((e) => e.start_us));
    const t1 = Math.max(...events.map((e) => e.start_us + e.duration_us));
    const W = 1000, H = 46, span = Math.max(t1 - t0, 1e-9);
    const s = svg("svg", {width: W, height: H + 18, class: "timeline", "data-device": dev.label});
    const drawn = [];
    for (const e of events) {
      const x = (e.start_us - t0) / span * W, w = Math.max(e.duration_us / span * W, 0.5);
      const g = svg("g", {class: "launch"});
      g.appendChild(svg("rect", {x: x, y: 4, width: w, height: H - 8, fill: color(e.name)}));
      g.appendChild(svg("title", {}, e.name + " (" + e.func + ") " + fmt(e.duration_us, 2) + " us"));
      if (w > 8 * e.name.length)
        g.appendChild(svg("text", {x: x + 3, y: H / 2 + 4, class: "label"}, e.name));
      s.appendChild(g);
      if (!drawn.includes(e.name)) drawn.push(e.name);
    }
    s.appendChild(svg("text", {x: 0, y: H + 14, class: "axis"}, "0 us"));
    s.appendChild(svg("text", {x: W, y: H + 14, class: "axis", "text-anchor": "end"},
                      fmt(span, 1) + " us"));
    parent.appendChild(s);
    const steps = el("p", {class: "steps"});
    steps.textContent = dev.label + ": " +
        dev.steps.map((st) => st.name + "(" + Math.round(st.percent) + "%)").join(" -> ");
    parent.appendChild(steps);
    for (const name of drawn)
      rendered.appendChild(el("li", {class: "rendered-kernel", "data-device": dev.label}, name));
  }

  function drawTable(dev, parent) {
    const t = el("table", {class: "summary", "data-device": dev.label});
    const head = el("tr");
    for (const h of ["name", "calls", "total ms", "avg ms", "min ms", "max ms", "time %",
                     "GFLOP/s", "GB/s", "shapes"]) head.appendChild(el("th", {}, h));
    t.appendChild(head);
    for (const r of dev.rows) {
      const tr = el("tr");
      const cells = [r.name, r.calls, fmt(r.total_us / 1e3, 4), fmt(r.avg_us / 1e3, 4),
                     fmt(r.min_us / 1e3, 4), fmt(r.max_us / 1e3, 4), fmt(r.percent, 1),
                     fmt(r.gflops, 2), fmt(r.gbs, 2), r.shapes || "-"];
      cells.forEach((c, i) => tr.appendChild(el("td", i ? {} : {class: "name"}, String(c))));
      tr.firstChild.style.borderLeft = "6px solid " + color(r.name);
      t.appendChild(tr);
    }
    parent.appendChild(t);
  }

  // Log-log: x = operations per byte, y = GFLOP/s; roofs min(peak, bandwidth * x).
  function drawRoofline(dev, parent) {
    const pts = dev.rows.filter((r) => r.intensity && r.gflops);
    const peaks = Object.entries(dev.peak_gflops);
    const levels = dev.memory.filter((m) => m.bandwidth_gbps > 0);
    if (!peaks.length || !levels.length) {
      parent.appendChild(el("p", {class: "note"},
          "No roofline: the HCD " + dev.hcd + " gives no peak rate or bandwidth."));
      return;
    }
    const W = 640, H = 380, L = 60, B = 40, R = 20, T = 16;
    const xs = pts.map((p) => p.intensity).concat([1 / 64, 256]);
    const top = Math.max(...peaks.map((p) => p[1]));
    const ys = pts.map((p) => p.gflops).concat([top * 2, top / 1e4]);
    const lx0 = Math.floor(Math.log10(Math.min(...xs))), lx1 = Math.ceil(Math.log10(Math.max(...xs)));
    const ly0 = Math.floor(Math.log10(Math.min(...ys))), ly1 = Math.ceil(Math.log10(Math.max(...ys)));
    const X = (v) => L + (Math.log10(v) - lx0) / (lx1 - lx0) * (W - L - R);
    const Y = (v) => H - B - (Math.log10(v) - ly0) / (ly1 - ly0) * (H - B - T);
    const s = svg("svg", {width: W, height: H, class: "roofline", "data-device": dev.label});
    for (let i = lx0; i <= lx1; ++i) {
      s.appendChild(svg("line", {x1: X(10 ** i), x2: X(10 ** i), y1: T, y2: H - B, class: "grid"}));
      s.appendChild(svg("text", {x: X(10 ** i), y: H - B + 16, class: "axis", "text-anchor": "middle"},
                        String(10 ** i)));
    }
    for (let i = ly0; i <= ly1; ++i) {
      s.appendChild(svg("line", {x1: L, x2: W - R, y1: Y(10 ** i), y2: Y(10 ** i), class: "grid"}));
      s.appendChild(svg("text", {x: L - 6, y: Y(10 ** i) + 4, class: "axis", "text-anchor": "end"},
                        String(10 ** i)));
    }
    s.appendChild(svg("text", {x: (L + W) / 2, y: H - 6, class: "axis", "text-anchor": "middle"},
                      "operations per byte"));
    s.appendChild(svg("text", {x: 14, y: H / 2, class: "axis", transform: "rotate(-90 14 " + H / 2 + ")",
                               "text-anchor": "middle"}, "GFLOP/s"));
    const xmin = 10 ** lx0, xmax = 10 ** lx1;
    levels.forEach((m, i) => {
      const last = i === levels.length - 1;
      for (const [dtype, peak] of peaks) {
        const knee = peak / m.bandwidth_gbps;
        const a = Math.max(xmin, Math.min(knee, xmax));
        const path = "M" + X(xmin) + "," + Y(m.bandwidth_gbps * xmin) + " L" + X(a) + "," +
                     Y(Math.min(peak, m.bandwidth_gbps * a)) + " L" + X(xmax) + "," + Y(peak);
        s.appendChild(svg("path", {d: path, class: last ? "roof" : "roof cache"}));
      }
      s.appendChild(svg("text", {x: X(xmin) + 4, y: Y(m.bandwidth_gbps * xmin) - 4, class: "rooflabel"},
                        m.name + " " + m.bandwidth_gbps + " GB/s"));
    });
    for (const [dtype, peak] of peaks)
      s.appendChild(svg("text", {x: W - R - 4, y: Y(peak) - 4, class: "rooflabel", "text-anchor": "end"},
                        dtype + " peak " + peak + " GFLOP/s"));
    for (const p of pts) {
      const g = svg("g", {class: "point"});
      g.appendChild(svg("circle", {cx: X(p.intensity), cy: Y(p.gflops), r: 5, fill: color(p.name)}));
      g.appendChild(svg("text", {x: X(p.intensity) + 7, y: Y(p.gflops) - 6, class: "label dark"}, p.name));
      g.appendChild(svg("title", {}, p.name + ": " + fmt(p.intensity, 3) + " op/B, " +
                                       fmt(p.gflops, 2) + " GFLOP/s"));
      s.appendChild(g);
    }
    parent.appendChild(s);
  }

  const sections = [["Timeline", drawTimeline], ["Kernels", drawTable], ["Roofline", drawRoofline]];
  for (const [title, draw] of sections) {
    report.appendChild(el("h2", {}, title));
    for (const dev of data.devices) {
      const box = el("section", {class: "device"});
      box.appendChild(el("h3", {}, dev.label + " (" + dev.hcd + ")"));
      draw(dev, box);
      report.appendChild(box);
    }
  }
  document.getElementById("render-status").textContent =
      "rendered " + rendered.children.length + " kernel timelines on " + data.devices.length + " devices";
})();
)JS";

constexpr std::string_view kStyle = R"CSS(
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; } h3 { font-size: 14px; }
table.summary { border-collapse: collapse; }
table.summary th, table.summary td { padding: 3px 10px; text-align: right; border-bottom: 1px solid #ddd; }
table.summary th:first-child, table.summary th:last-child, table.summary td.name, table.summary td:last-child { text-align: left; }
svg { background: #fafafa; border: 1px solid #ddd; }
.label { font-size: 11px; fill: #fff; } .label.dark { fill: #222; }
.axis, .rooflabel { font-size: 11px; fill: #555; }
.grid { stroke: #e4e4e4; } .roof { stroke: #222; stroke-width: 2; fill: none; }
.roof.cache { stroke: #999; stroke-width: 1; stroke-dasharray: 5 4; }
.steps { font-family: monospace; } #rendered-kernels { color: #777; font-size: 12px; }
)CSS";

// JSON inside a <script> element: "</" would end the element early.
std::string script_safe(std::string json) {
  for (size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 3))
    json.replace(at, 2, "<\\/");
  return json;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

nlohmann::json page_data(const std::vector<ProfiledDevice>& devices,
                         const std::vector<ProfileEvent>& events) {
  nlohmann::json devs = nlohmann::json::array();
  for (const DeviceSummary& s : summarize(devices, events)) {
    nlohmann::json rows = nlohmann::json::array();
    for (const KernelRow& r : s.rows) {
      nlohmann::json row = {{"name", r.name},
                            {"shapes", r.shapes},
                            {"calls", r.calls},
                            {"total_us", r.total_us},
                            {"avg_us", r.avg_us()},
                            {"min_us", r.min_us},
                            {"max_us", r.max_us},
                            {"percent", r.percent},
                            {"gbs", r.gbs()},
                            {"bytes", r.bytes},
                            {"dtype", std::string(dtype_name(r.dtype))}};
      row["gflops"] = r.gflops() ? nlohmann::json(*r.gflops()) : nlohmann::json(nullptr);
      row["intensity"] = r.intensity() ? nlohmann::json(*r.intensity()) : nlohmann::json(nullptr);
      rows.push_back(row);
    }
    nlohmann::json peaks = nlohmann::json::object();
    for (const auto& [dtype, gflops] : s.device.hcd.peak_gflops)
      if (gflops > 0)
        peaks[std::string(dtype_name(dtype))] = gflops;
    nlohmann::json memory = nlohmann::json::array();
    for (const hcd::MemoryLevel& m : s.device.hcd.memory)
      if (m.scope != "register")
        memory.push_back({{"name", m.name}, {"bandwidth_gbps", m.bandwidth_gbps}});
    nlohmann::json steps = nlohmann::json::array();
    for (const TimelineStep& st : timeline_steps(s.index, events))
      steps.push_back({{"name", st.name}, {"percent", st.percent}});
    devs.push_back({{"index", s.index},
                    {"label", s.device.label},
                    {"hcd", s.device.hcd.name},
                    {"total_us", s.total_us},
                    {"rows", rows},
                    {"peak_gflops", peaks},
                    {"memory", memory},
                    {"steps", steps}});
  }
  nlohmann::json evs = nlohmann::json::array();
  for (const ProfileEvent& e : events)
    evs.push_back({{"device", e.device},
                   {"name", e.name},
                   {"func", e.func},
                   {"start_us", e.start_us},
                   {"duration_us", e.duration_us}});
  return {{"devices", devs}, {"events", evs}};
}

} // namespace

std::string html_report(const std::vector<ProfiledDevice>& devices,
                        const std::vector<ProfileEvent>& events) {
  std::string labels;
  for (const ProfiledDevice& d : devices)
    labels += (labels.empty() ? "" : ", ") + d.label;
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<title>Unitile profile: " + html_escape(labels) + "</title>\n";
  page += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  page += "<h1>Unitile profile: " + html_escape(labels) + "</h1>\n";
  page += "<p id=\"render-status\">This report is drawn by its script; enable JavaScript to see "
          "it.</p>\n";
  page += "<div id=\"report\"></div>\n<ul id=\"rendered-kernels\"></ul>\n";
  page += "<script type=\"application/json\" id=\"profile-data\">" +
          script_safe(page_data(devices, events).dump()) + "</script>\n";
  page += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return page;
}

} // namespace unitile::profile
