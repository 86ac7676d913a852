#!/usr/bin/env python3
"""The disk's own append-and-fdatasync latency, as the commit log sees it (docs/benchmarks.md, "The applier's
pace"; docs/operations.md, "Write-back and commit latency"): frames of FRAME bytes written into a file
preallocated with written zeros and fdatasync'd after each, at RATE frames a second, for SECONDS.

    clients/python/bench/fsync_probe.py --dir D [--frame BYTES] [--rate N] [--seconds S]

Prints p50, p99 and the largest latency, and how many took over 32 ms and over 131 ms (the bounds
`timeline_rounds.sh` counts for the daemon's groups). Run it on the data directory's disk with nothing else
writing to tell the disk's stalls from the daemon's.
"""
import argparse
import os
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="a directory on the disk to probe (the data directory's; not a tmpfs)")
    ap.add_argument("--frame", type=int, default=200_000, help="bytes per append (a 1,000-follower post's group is ~1 MB, a set's ~25 KB)")
    ap.add_argument("--rate", type=float, default=40.0, help="appends per second")
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    if a.frame <= 0 or a.rate <= 0 or a.seconds <= 0:
        ap.error("--frame, --rate and --seconds must be positive")
    size = max(64 << 20, a.frame * 64)
    fd, path = tempfile.mkstemp(prefix="hearth-fsync-probe-", dir=a.dir)
    try:
        zeros = bytes(1 << 20)
        for off in range(0, size, len(zeros)):
            os.pwrite(fd, zeros[: min(len(zeros), size - off)], off)
        os.fsync(fd)
        frame = b"x" * a.frame
        lat = []
        start = time.monotonic()
        due = start
        off = 0
        while time.monotonic() - start < a.seconds:
            now = time.monotonic()
            if now < due:
                time.sleep(due - now)
            due += 1 / a.rate
            if off + a.frame > size:
                off = 0
            t = time.monotonic()
            os.pwrite(fd, frame, off)
            os.fdatasync(fd)
            lat.append((time.monotonic() - t) * 1000)
            off += a.frame
    finally:
        os.close(fd)
        os.unlink(path)
    lat.sort()
    n = len(lat)
    print(f"{n} appends of {a.frame} bytes at {a.rate:g}/s in {a.dir}: p50 {lat[n // 2]:.2f} ms, "
          f"p99 {lat[min(n - 1, n * 99 // 100)]:.2f} ms, max {lat[-1]:.1f} ms; "
          f"{sum(x > 32 for x in lat)} over 32 ms, {sum(x > 131 for x in lat)} over 131 ms")


if __name__ == "__main__":
    main()
