#!/usr/bin/env python3
"""Test of the `unitile bench` tool (not a timing test): `--quick` on tiny shapes must write
a well-formed JSON list whose records carry the documented keys, positive times and
ratio = baseline_ms / unitile_ms; with no baseline libraries every record must say the
baseline is unavailable, and the command must still succeed; and a baseline that gives a
different answer must turn into a `failed` record with no Unitile time and exit status 1;
`--huge-pages` must be recorded, with both sides still agreeing on operands of 2 MiB and
more, and refused with `--ops`.
    check_bench_quick.py PATH/TO/unitile SOURCE_DIR"""
import json
import math
import os
import subprocess
import sys
import tempfile

KEYS = {"op", "shape", "dtype", "threads", "unitile_ms", "baseline", "baseline_ms", "ratio"}


def bench(unitile, json_path, *args, env=None, status=0):
    cmd = [unitile, "bench", "--quick", "--repeat", "1", "--json", json_path, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != status:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    with open(json_path) as f:
        records = json.load(f)
    if not isinstance(records, list) or not records:
        sys.exit(f"FAIL: {json_path} is not a non-empty JSON list")
    for r in records:
        missing = KEYS - r.keys()
        if missing:
            sys.exit(f"FAIL: record {r} lacks {sorted(missing)}")
    return records, proc.stdout


def main():
    unitile, source_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.setdefault("UNITILE_CACHE_DIR", os.path.join(tmp, "cache"))
        env.pop("UNITILE_HUGE_PAGES", None)
        path = os.path.join(tmp, "bench.json")
        records, table = bench(unitile, path, "--threads", "1", env=env)
        if any(r.get("huge_pages") is not False for r in records):
            sys.exit("FAIL: records without --huge-pages do not say huge_pages: false")

        ops = {r["op"] for r in records}
        for op in ("gemm", "triad", "softmax", "layernorm", "rmsnorm", "chain", "attention",
                   "compile-cold", "compile-hit"):
            if op not in ops:
                sys.exit(f"FAIL: no record for {op}")
        for r in records:
            if r["status"] == "unavailable":
                continue  # a baseline package missing on this machine: allowed, and said so
            if r["status"] != "ok":
                sys.exit(f"FAIL: record not ok: {r}")
            if r["threads"] != 1 or r["dtype"] != "f32":
                sys.exit(f"FAIL: wrong threads/dtype: {r}")
            for key in ("unitile_ms", "baseline_ms", "ratio"):
                if not (isinstance(r[key], (int, float)) and r[key] > 0 and math.isfinite(r[key])):
                    sys.exit(f"FAIL: {key} is not a positive time in {r}")
            if abs(r["ratio"] - r["baseline_ms"] / r["unitile_ms"]) > 1e-9 * r["ratio"]:
                sys.exit(f"FAIL: ratio is not baseline_ms / unitile_ms in {r}")
        if "summary gemm f32 vs" not in table:
            sys.exit(f"FAIL: no geometric-mean summary in the table:\n{table}")

        # B and C of 8 x 65536 f32 are 2 MiB each: on huge pages for both sides.
        records, _ = bench(unitile, path, "--op", "gemm", "--shape", "8x65536x8", "--huge-pages",
                           "--threads", "1", env=env)
        for r in records:
            if r["huge_pages"] is not True or r["status"] not in ("ok", "unavailable"):
                sys.exit(f"FAIL: a --huge-pages record: {r}")
        proc = subprocess.run([unitile, "bench", "--ops", "--huge-pages"], capture_output=True, text=True,
                              env=env, timeout=60)
        if proc.returncode != 1 or "--huge-pages is for the kernel benchmarks" not in proc.stderr:
            sys.exit(f"FAIL: --ops --huge-pages: exit {proc.returncode}\n{proc.stderr}")

        env["UNITILE_BASELINE_DIR"] = os.path.join(tmp, "no-baselines")
        records, _ = bench(unitile, path, "--op", "gemm", "--shape", "8x8x8", env=env)
        for r in records:
            if r["status"] != "unavailable" or "not found" not in r["note"] or r["ratio"] is not None:
                sys.exit(f"FAIL: a missing baseline is not reported as unavailable: {r}")

        wrong_dir = os.path.join(tmp, "wrong-baselines")
        os.mkdir(wrong_dir)
        subprocess.run(["cc", "-shared", "-fPIC", "-I", os.path.join(source_dir, "bench"),
                        os.path.join(source_dir, "tests", "bench", "wrong_baseline.c"), "-o",
                        os.path.join(wrong_dir, "libunitile-baseline-openblas.so")], check=True)
        env["UNITILE_BASELINE_DIR"] = wrong_dir
        records, _ = bench(unitile, path, "--op", "gemm", "--shape", "8x8x8", env=env, status=1)
        wrong = [r for r in records if r["baseline"] == "openblas"]
        if len(wrong) != 1 or wrong[0]["status"] != "failed" or "disagrees" not in wrong[0]["note"] \
                or wrong[0]["unitile_ms"] is not None or wrong[0]["ratio"] is not None:
            sys.exit(f"FAIL: a wrong result is not reported as an untimed failure: {records}")
    print(f"bench --quick: ok ({len(records)} records)")


if __name__ == "__main__":
    main()
