"""Checks `unitile profile` output and files, independently of the C++ that wrote them.

  check_profile.py text OUT --devices cpu,sim --kernels MatMul,Softmax --calls N
      every device has a table whose rows are exactly the kernels, with N calls each and
      shares that sum to 100; one timeline line per device, the kernels in order, arrows
      aligned in the same columns on every line.
  check_profile.py trace TRACE.json --devices ... --kernels ... --calls N
      Chrome Trace Event form: traceEvents; every event has name/ph/pid/tid; complete
      events ("X") have numeric ts >= 0 and dur > 0 (microseconds); process_name and
      thread_name metadata name every pid/tid used; launches on one pid never overlap.
  check_profile.py html DOM.html --devices ... --kernels ...
      the DOM that headless Chromium dumped after the page's script ran: one
      li.rendered-kernel per device and kernel, the status line, timeline/roofline SVGs.
"""
import argparse
import json
import re
import sys
from html.parser import HTMLParser


def fail(msg):
    print("check_profile: FAIL: " + msg)
    sys.exit(1)


def labels(devices):
    return [d + "-0" for d in devices]


def check_text(path, devices, kernels, calls):
    lines = open(path).read().splitlines()
    for label in labels(devices):
        head = [i for i, l in enumerate(lines) if l.startswith(label + " (")]
        if len(head) != 1:
            fail(f"no table header for {label}")
        i = head[0] + 1
        if not lines[i].split()[:3] == ["name", "calls", "total_ms"]:
            fail(f"{label}: bad column header: {lines[i]!r}")
        rows = {}
        for line in lines[i + 1:]:
            if not line.startswith("  "):
                break
            f = line.split()
            rows[f[0]] = f
        if sorted(rows) != sorted(kernels):
            fail(f"{label}: rows {sorted(rows)} != kernels {sorted(kernels)}")
        share = 0.0
        for name, f in rows.items():
            if int(f[1]) != calls:
                fail(f"{label} {name}: {f[1]} calls, expected {calls}")
            total, avg, lo, hi = map(float, f[2:6])
            if not (0 < lo <= avg + 1e-4 and avg <= hi + 1e-4 and abs(total - avg * calls) < 1e-3 + 1e-3 * total):
                fail(f"{label} {name}: inconsistent times {f[2:6]}")
            share += float(f[6])
        if abs(share - 100) > 0.5:
            fail(f"{label}: shares sum to {share}")
    timeline = [l for l in lines if re.match(r"^\S+-\d+:\s", l)]
    if [l.split(":")[0] for l in timeline] != labels(devices):
        fail(f"timeline lines {timeline} are not one per device in order")
    arrows = None
    for line in timeline:
        steps = re.findall(r"(\w+)\((\d+)%\)", line)
        if [s[0] for s in steps] != kernels:
            fail(f"timeline {line!r}: steps are not the kernels in order")
        total = sum(int(s[1]) for s in steps)
        if abs(total - 100) > len(steps):
            fail(f"timeline {line!r}: shares sum to {total}")
        cols = [m.start() for m in re.finditer(" -> ", line)]
        if arrows is not None and cols != arrows:
            fail(f"timeline arrows not aligned: {cols} vs {arrows}")
        arrows = cols


def check_trace(path, devices, kernels, calls):
    trace = json.load(open(path))
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    process_names, thread_names, used = {}, set(), set()
    complete = []
    for e in events:
        for key in ("name", "ph", "pid", "tid"):
            if key not in e:
                fail(f"event without {key}: {e}")
        if e["ph"] == "M":
            if e["name"] == "process_name":
                process_names[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                thread_names.add((e["pid"], e["tid"]))
        elif e["ph"] == "X":
            for key in ("ts", "dur"):
                if not isinstance(e.get(key), (int, float)):
                    fail(f"complete event without numeric {key}: {e}")
            if e["ts"] < 0 or e["dur"] <= 0:
                fail(f"bad ts/dur: {e}")
            used.add((e["pid"], e["tid"]))
            complete.append(e)
        else:
            fail(f"unexpected phase {e['ph']}")
    for pid, tid in used:
        if pid not in process_names:
            fail(f"pid {pid} has no process_name metadata")
        if (pid, tid) not in thread_names:
            fail(f"pid {pid} tid {tid} has no thread_name metadata")
    names = sorted(process_names.values())
    for label in labels(devices):
        if not any(n.startswith(label + " ") for n in names):
            fail(f"no process named {label}: {names}")
    if len(process_names) != len(devices):
        fail(f"{len(process_names)} processes for {len(devices)} devices")
    for pid in process_names:
        mine = sorted((e for e in complete if e["pid"] == pid), key=lambda e: e["ts"])
        for k in kernels:
            invocations = {e["args"]["call"] for e in mine if e["name"] == k}
            if len(invocations) != calls:
                fail(f"pid {pid} {k}: {len(invocations)} calls, expected {calls}")
        for a, b in zip(mine, mine[1:]):
            if a["ts"] + a["dur"] > b["ts"] + 1e-3:
                fail(f"pid {pid}: launches overlap on one queue: {a['args']['func']} and {b['args']['func']}")


class RenderedKernels(HTMLParser):
    def __init__(self):
        super().__init__()
        self.items, self.tags, self._in, self.status, self._status = [], {}, None, "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[(tag, a.get("class"))] = self.tags.get((tag, a.get("class")), 0) + 1
        if tag == "li" and a.get("class") == "rendered-kernel":
            self._in = a.get("data-device")
            self.items.append([self._in, ""])
        self._status = a.get("id") == "render-status"

    def handle_data(self, data):
        if self._in is not None:
            self.items[-1][1] += data
        if self._status:
            self.status += data

    def handle_endtag(self, tag):
        if tag == "li":
            self._in = None
        self._status = False


def check_html(path, devices, kernels):
    p = RenderedKernels()
    p.feed(open(path).read())
    got = sorted((d, k.strip()) for d, k in p.items)
    want = sorted((label, k) for label in labels(devices) for k in kernels)
    if got != want:
        fail(f"rendered kernels {got} != {want}")
    if not p.status.startswith("rendered "):
        fail(f"the page's script did not finish: status {p.status!r}")
    for cls in ("timeline", "roofline"):
        if p.tags.get(("svg", cls), 0) != len(devices):
            fail(f"expected {len(devices)} {cls} drawings, got {p.tags.get(('svg', cls), 0)}")
    if p.tags.get(("table", "summary"), 0) != len(devices):
        fail("expected one summary table per device")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["text", "trace", "html"])
    ap.add_argument("path")
    ap.add_argument("--devices", required=True)
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--calls", type=int, default=1)
    a = ap.parse_args()
    devices, kernels = a.devices.split(","), a.kernels.split(",")
    if a.what == "text":
        check_text(a.path, devices, kernels, a.calls)
    elif a.what == "trace":
        check_trace(a.path, devices, kernels, a.calls)
    else:
        check_html(a.path, devices, kernels)
    print(f"check_profile: {a.what} ok")


if __name__ == "__main__":
    main()
