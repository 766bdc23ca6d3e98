#!/usr/bin/env python3
"""What `ray.get` of a `bytes` object does after its store round trip, without Ray:
CPython copies the bytes into a new object (a `bytes` keeps its data inline), and
glibc serves that allocation from heap pages it reused, or, above its largest mmap
threshold (32 MiB on 64-bit), from a fresh mapping whose every page faults in on
the copy. Prints the median of 21 copies per size, from an mmap'd buffer as the
store's is (docs/fidelity.md, object_get).

  python copy_probe.py
"""
import mmap
import time

SIZES = [10**6, 10**7, 30 * 2**20, 34 * 2**20, 10**8]


def main():
    for size in SIZES:
        src = mmap.mmap(-1, size)
        src.write(b"\x01" * size)
        view = memoryview(src)
        times = []
        for _ in range(21):
            t0 = time.perf_counter()
            out = bytes(view)
            times.append(time.perf_counter() - t0)
            del out
        times.sort()
        median = times[len(times) // 2]
        print(f"{size:>11} B  median {median * 1e3:8.3f} ms  {median * 1e6 / (size / 1e6):6.1f} us a MB")
        view.release()
        src.close()


if __name__ == "__main__":
    main()
