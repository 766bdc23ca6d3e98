"""A loopback port for a server a script starts next, Ray's own included.

A port the kernel picked (bind to port 0) and the script let go of is the next one the
kernel may hand to anyone asking, and a booting Ray cluster asks hundreds of times: its
servers bind port 0 and every outgoing connection draws a port. Once, the what-if
test's observer found its port answering in gRPC. So the ports come from below the
kernel's ephemeral range and above Ray's worker ports (10002-19999), where nothing is
handed out unasked, walked from an offset of the process's own (tests/common/mod.rs
does the same for the Rust tests)."""
import itertools
import os
import socket

_LOW = 20_000
_drawn = itertools.count()


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port():
    span = _ephemeral_low() - _LOW
    offset = os.getpid() * 7_919
    for _ in range(max(0, min(span, 4_096))):
        port = _LOW + (offset + next(_drawn)) % span
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    # No room below the ephemeral range (or all of it taken): the kernel's pick.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
