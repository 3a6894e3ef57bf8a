#!/usr/bin/env python3
"""vm-stall-probe: does this machine freeze when its CPUs are busy while it writes to disk?

Some virtual machines are frozen whole by their host for part of every scheduling period once
the guest's virtual CPUs plus the host's own work for the guest's disk go over the VM's CPU
budget. Every latency sample that overlaps a freeze carries it, whatever the program does, so
the `assets` suite's `latency-during-transfer` p99 cannot be judged on such a machine without
knowing it. This script shows it in about 20 seconds, with no Swift involved.

For 0, 1 and 2 busy loops (processes spinning on a CPU), it runs for 4 s:
  - a writer: 256 KiB O_DIRECT writes, each followed by fdatasync (what a node receiving an
    asset does, Spec/assets.md §5.1), reporting its MB/s and its operations over 5 ms (`stalls`)
    with the first few times they happened (a freeze that repeats every 100 ms shows as times
    0.1 s apart);
  - a probe: a 4 KiB write plus fdatasync every 10 ms (what a record save costs), reporting its
    p50/p99/max latency;
  - the share of CPU time the hypervisor stole (`steal` in /proc/stat).

Output, one line per case:
  vmprobe case=busy-<n> MBps=… stalls=… probe_p50_ms=… probe_p99_ms=… probe_max_ms=… stolen_cpu_pct=… stall_times=…

Usage: python3 Benchmarks/Scripts/vm-stall-probe.py [directory]   (default: the system temp dir)
The directory must be on the disk under test; the script removes its files when done.
"""

import mmap
import multiprocessing
import os
import sys
import tempfile
import threading
import time

SECONDS = 4.0
PIECE = 256 * 1024


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def stolen_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) if len(fields) > 8 else 0


def total_ticks():
    with open("/proc/stat") as f:
        return sum(int(x) for x in f.readline().split()[1:9])


def run(directory, busy):
    path = os.path.join(directory, "vm-stall-probe-%d.bin" % os.getpid())
    probe_path = path + ".probe"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    except OSError as e:
        sys.exit("vm-stall-probe: %s does not take O_DIRECT writes (%s); pass a directory on a disk, not tmpfs" % (directory, e))
    probe = os.open(probe_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    buffer = mmap.mmap(-1, PIECE)  # page-aligned, as O_DIRECT needs
    buffer.write(os.urandom(PIECE))
    spinners = [multiprocessing.Process(target=spin, args=(SECONDS + 0.5,)) for _ in range(busy)]
    for p in spinners:
        p.start()
    time.sleep(0.2)  # let the spinners reach their CPUs

    done = threading.Event()
    latencies = []

    def probe_loop():
        while not done.is_set():
            t = time.perf_counter()
            os.pwrite(probe, b"x" * 4096, 0)
            os.fdatasync(probe)
            latencies.append((time.perf_counter() - t) * 1000)
            time.sleep(0.01)

    prober = threading.Thread(target=probe_loop)
    steal0, total0 = stolen_ticks(), total_ticks()
    start = time.perf_counter()
    prober.start()
    offset, pieces, stalls = 0, 0, []
    while time.perf_counter() - start < SECONDS:
        t = time.perf_counter()
        os.pwritev(fd, [buffer], offset)
        os.fdatasync(fd)
        if (time.perf_counter() - t) * 1000 > 5:
            stalls.append(round(time.perf_counter() - start, 3))
        pieces += 1
        offset = (offset + PIECE) % (1 << 30)  # at most 1 GiB on disk
    elapsed = time.perf_counter() - start
    done.set()
    prober.join()
    steal, total = stolen_ticks() - steal0, total_ticks() - total0
    for p in spinners:
        p.join()
    os.close(fd)
    os.close(probe)
    os.unlink(path)
    os.unlink(probe_path)

    latencies.sort()
    n = len(latencies)

    def pct(p):
        return latencies[min(n - 1, max(0, int(n * p + 0.999999) - 1))] if n else 0.0

    print("vmprobe case=busy-%d MBps=%.1f stalls=%d probe_p50_ms=%.2f probe_p99_ms=%.2f probe_max_ms=%.2f stolen_cpu_pct=%.1f stall_times=%s"
          % (busy, pieces * PIECE / elapsed / 1e6, len(stalls), pct(0.5), pct(0.99), latencies[-1] if n else 0.0,
             100.0 * steal / max(total, 1), ",".join("%.3f" % s for s in stalls[:8]) or "-"), flush=True)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
    print("# vm-stall-probe: %d CPUs, writing in %s" % (os.cpu_count() or 0, directory), flush=True)
    for busy in (0, 1, 2):
        run(directory, busy)


if __name__ == "__main__":
    main()
