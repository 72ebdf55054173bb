"""Checks on a --report-json file, for the chip-model lit tests.

check_report.py streaming FILE [streamed]: the one launch's DRAM traffic is the
  compulsory traffic of C = A + B within 1%: A and B read once, C fetched once
  (write-allocate) and written back once; with `streamed` (C written with streaming
  stores), C is not fetched, only written.
check_report.py reuse SMALL BIG: DRAM bytes over compulsory bytes is below 1.1 for
  the matmul whose data fits L2 and above 1.5 for the one whose data does not.
"""
import json
import sys


def launch(path):
    with open(path) as f:
        k = json.load(f)["kernels"][0]
    assert len(k["launches"]) >= 1, k
    return k, k["launches"]


def dram(launches):
    levels = [l["levels"][-1] for l in launches]
    return sum(l["read_bytes"] for l in levels), sum(l["write_bytes"] for l in levels)


def shape_bytes(k, *names):
    s = k["shapes"]
    out = 1
    for n in names:
        out *= s[n]
    return out * 4


def main():
    mode = sys.argv[1]
    if mode == "streaming":
        k, ls = launch(sys.argv[2])
        n = shape_bytes(k, "N")
        read, write = dram(ls)
        reads = 2 * n if sys.argv[3:4] == ["streamed"] else 3 * n
        assert abs(read - reads) <= 0.01 * reads, (read, reads)
        assert abs(write - n) <= 0.01 * n, (write, n)
        print(f"streaming ok: DRAM read {read} write {write}, compulsory {reads} and {n}")
    elif mode == "reuse":
        ratios = []
        for path in sys.argv[2:4]:
            k, ls = launch(path)
            # A, B, C written once and read back once; a schedule that stores C's identity in a
            # launch of its own (the init launch) writes and reads C once more.
            c_passes = 2 + 2 * (len(ls) - 1)
            compulsory = shape_bytes(k, "M", "K") + shape_bytes(k, "K", "N") + c_passes * shape_bytes(k, "M", "N")
            read, write = dram(ls)
            ratios.append((read + write) / compulsory)
        assert ratios[0] < 1.1, ratios
        assert ratios[1] > 1.5, ratios
        print(f"reuse ok: DRAM / compulsory = {ratios[0]:.2f} (fits L2), {ratios[1]:.2f} (does not)")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
