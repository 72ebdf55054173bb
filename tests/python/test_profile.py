"""tl.profile(): what a block of Python records, and the reports made from it."""

import json

import numpy as np
import pytest

import unitile as tl

MATMUL = "C[i,j] += A[i,k] * B[k,j]"


@pytest.fixture
def matmul(rng):
    mm = tl.comprehension(MATMUL)
    a = rng.standard_normal((7, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    return mm, a, b


def test_records_the_kernels_run_in_the_block_and_nothing_outside(device, matmul, rng):
    mm, a, b = matmul
    mm(a, b, device=device)  # before the block: compiled and run, not recorded
    x = rng.standard_normal((4, 6)).astype(np.float32)
    with tl.profile() as p:
        assert p.active
        c = mm(a, b, device=device)
        y = tl.relu(x, device=device)
    assert not p.active
    mm(a, b, device=device)  # after the block: not recorded
    tl.relu(x, device=device)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y, np.maximum(x, 0))

    events = p.events()
    calls = sorted({e.call for e in events})
    assert len(calls) == 2, events  # one call of each kernel, however many launches each made
    first = [e for e in events if e.call == calls[0]]
    second = [e for e in events if e.call == calls[1]]
    assert {(e.name, e.shapes) for e in first} == {("comprehension", "A[7,5] B[5,3] C[7,3]")}
    assert {(e.name, e.shapes) for e in second} == {("relu", "x0[4,6] out0[4,6]")}
    assert all(e.device == f"{device}-0" and e.queue == 0 for e in events)
    assert all(e.duration_us >= 0 and e.start_us >= 0 for e in events)
    assert all(e.dtype == "f32" and e.bytes > 0 for e in events)
    # matmul's operations are 2*M*N*K however it was scheduled; relu's one per element
    assert sum(e.operations for e in first) == 2 * 7 * 3 * 5
    assert sum(e.operations for e in second) == 4 * 6
    assert [d["label"] for d in p.devices()] == [f"{device}-0"]


def test_nothing_recorded_without_a_profiler_and_restart_continues(matmul):
    mm, a, b = matmul
    p = tl.profile()
    mm(a, b)
    assert p.events() == [] and not p.active
    with p:
        mm(a, b)
    n = len(p.events())
    assert n >= 1
    with p:  # a second block adds to the same recording, on the same clock
        mm(a, b)
    events = p.events()
    assert len(events) == 2 * n
    assert events[n].start_us >= events[n - 1].start_us + events[n - 1].duration_us - 1.0
    p.clear()
    assert p.events() == [] and p.devices() == []


def test_table_timeline_and_chrome_trace_of_two_devices(matmul, tmp_path):
    mm, a, b = matmul
    devices = [d for d in ("cpu", "sim") if d in tl.devices()]
    for d in devices:
        mm(a, b, device=d)
    with tl.profile() as p:
        for d in devices:
            mm(a, b, device=d)
            mm(a, b, device=d)
    events = p.events()
    labels = [f"{d}-0" for d in devices]
    assert sorted({e.device for e in events}) == sorted(labels)

    table = p.table()
    timeline = p.timeline()
    name = events[0].name
    for label in labels:
        assert label in table and label in timeline
    assert name in table and name in timeline
    assert len([line for line in timeline.splitlines() if line.strip()]) >= len(devices)
    assert str(p) == table

    path = tmp_path / "trace.json"
    p.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(events)
    for ev, rec in zip(complete, events):
        assert ev["name"] == rec.name and ev["tid"] == 0
        assert ev["ts"] == pytest.approx(rec.start_us) and ev["dur"] == pytest.approx(rec.duration_us)
        assert ev["args"]["func"] == rec.func
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(names) == sorted({e["pid"] for e in complete})
    assert sorted(n.split(" ")[0] for n in names.values()) == sorted(labels)

    html = tmp_path / "report.html"
    p.export_html(html)
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>") or text.lstrip().lower().startswith("<!doctype html")
    assert name in text and "http://" not in text.replace("http://www.w3.org", "")


def test_one_profiler_at_a_time():
    with tl.profile():
        other = tl.profile()
        with pytest.raises(tl.Error, match="another profiler"):
            other.start()
    with other:  # free once the first one stopped
        assert other.active


def test_export_to_an_unwritable_path_is_an_error(matmul, tmp_path):
    mm, a, b = matmul
    with tl.profile() as p:
        mm(a, b)
    with pytest.raises(tl.Error):
        p.export_chrome_trace(tmp_path / "no-such-dir" / "trace.json")
    assert not (tmp_path / "no-such-dir").exists()


def test_a_traced_kernel_is_recorded_under_its_function_name(device, rng):
    @tl.kernel
    def scaled_softmax(a, b):
        return tl.softmax(tl.matmul(a, b) * 2.0, axis=-1)

    a = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    scaled_softmax(a, b, device=device)
    with tl.profile() as p:
        scaled_softmax(a, b, device=device)
    events = p.events()
    assert events and {(e.name, e.device, e.call) for e in events} == {("scaled_softmax", f"{device}-0", 0)}
    assert all(e.func.startswith("scaled_softmax_") for e in events)
    assert "scaled_softmax" in p.timeline()
