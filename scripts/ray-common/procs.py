"""Every process's CPU time, read from /proc: what the probes that watch a real Ray's
processes (scripts/ray-observe/observe_cluster.py, scripts/ray-whatif/cpu_probe.py) set
side by side over a run."""
import os


def proc_cpu():
    """{pid: (name, cmd, utime+stime seconds)} of every process on the machine."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
        rest = st[st.rfind(")") + 2:].split()
        name = st[st.find("(") + 1:st.rfind(")")]
        out[int(pid)] = (name, cmd, (int(rest[11]) + int(rest[12])) / hz)
    return out
