"""pytest configuration of the op tests: which binary and devices, and the status file
`unitile ops` reads, merged from every case's result per (device, op)."""
import datetime
import glob
import json
import os
import subprocess

import pytest


def pytest_addoption(parser):
    parser.addoption("--unitile", required=True, help="the unitile binary")
    parser.addoption("--devices", default="cpu,sim,opencl",
                     help="devices to test on; unavailable ones are skipped and said so")
    parser.addoption("--cross-devices", default="cpu-aarch64,cpu-riscv64",
                     help="devices that run only the cases marked cross (qemu is slow)")
    parser.addoption("--status-out", default="",
                     help="write the per-device op status here (JSON, for `unitile ops`)")


def available_devices(unitile, names):
    """The devices of `names` that load and can run here."""
    listing = subprocess.run([unitile, "devices"], capture_output=True, text=True).stdout
    found, current = {}, None
    for line in listing.splitlines():
        if line and not line.startswith(" "):
            current = line.split()[0]
            found[current] = True
        elif current and "unavailable" in line:
            found[current] = False
    return [d for d in names if d and found.get(d)]


@pytest.fixture(scope="session")
def unitile(request):
    return os.path.abspath(request.config.getoption("--unitile"))


@pytest.fixture(scope="session")
def devices(request, unitile):
    return available_devices(unitile, request.config.getoption("--devices").split(","))


@pytest.fixture(scope="session")
def cross_devices(request, unitile):
    return available_devices(unitile, request.config.getoption("--cross-devices").split(","))


def results_dir(config):
    out = config.getoption("--status-out")
    return out + ".d" if out else ""


def pytest_configure(config):
    d = results_dir(config)
    if d and not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        os.makedirs(d, exist_ok=True)
        for f in glob.glob(os.path.join(d, "*.jsonl")):
            os.remove(f)


@pytest.fixture(scope="session")
def record(request):
    """record(device, op, ok, message): one case's result, appended to this worker's file."""
    d = results_dir(request.config)
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")

    def write(device, op, ok, message):
        if not d:
            return
        with open(os.path.join(d, f"{worker}.jsonl"), "a") as f:
            f.write(json.dumps({"device": device, "op": op, "ok": ok, "message": message}) + "\n")
    return write


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    out = config.getoption("--status-out")
    if not out or hasattr(config, "workerinput"):
        return
    # Start from the previous file so a filtered run (-k) updates only what it ran.
    status = {}
    if os.path.exists(out):
        try:
            with open(out) as f:
                status = json.load(f).get("devices", {})
        except (OSError, ValueError):
            status = {}
    fresh = {}
    for path in sorted(glob.glob(os.path.join(results_dir(config), "*.jsonl"))):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                key = (r["device"], r["op"])
                if key not in fresh or fresh[key] == "ok":
                    fresh[key] = "ok" if r["ok"] else r["message"]
    for (device, op), s in fresh.items():
        status.setdefault(device, {})[op] = s
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "devices": status}, f, indent=1, sort_keys=True)
    os.replace(tmp, out)
