"""The Prometheus text format as the differential harness reads it, and how a series'
identity is made comparable across runs: values that name a node become its role,
volatile values (pids, worker ids, session names) become "*"."""
import json
import re

LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
# Values that change from run to run and say nothing about which series exist.
VOLATILE_KEYS = {"WorkerId", "pid", "SessionName", "ActorId", "JobId", "PlacementGroupId", "TaskId", "ObjectId"}
# Histogram/summary bucket labels: one family's series, not separate ones.
BUCKET_KEYS = {"le", "quantile"}
HEX_ID = re.compile(r"^[0-9a-f]{16,}$")


class Series:
    __slots__ = ("family", "role", "labels", "_key")

    def __init__(self, family, role, labels):
        self.family = family
        self.role = role
        self.labels = labels
        self._key = (family, role, tuple(sorted(labels.items())))

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return self._key == other._key

    def __str__(self):
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        return f"{self.family}{{{inner}}}@{self.role}"


class Normalizer:
    def __init__(self, ips, node_ids):
        self.by_ip = {ip: role for role, ip in ips.items()}
        self.by_node_id = {nid: role for role, nid in node_ids.items()}

    def value(self, key, v):
        if key in VOLATILE_KEYS:
            return "*"
        if v in self.by_ip:
            return self.by_ip[v]
        host = v.rsplit(":", 1)[0]
        if host in self.by_ip and v != host:
            return self.by_ip[host] + ":*"
        if v in self.by_node_id:
            return self.by_node_id[v]
        if HEX_ID.match(v):
            return "*"
        return v

    def node_role(self, v):
        return self.by_ip.get(v) or self.by_node_id.get(v) or ("unknown:" + v)


def parse(text):
    """[(family, type, sample labels dict)] for every sample; families as PromQL names them
    (counters with their _total, histograms without _bucket/_sum/_count)."""
    types = {}
    out = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind.strip()
            continue
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        space = line.find(" ")
        if brace != -1 and brace < space:
            name = line[:brace]
            labels = dict(LABEL.findall(line[brace:line.rfind("}") + 1]))
        else:
            name = line[:space]
            labels = {}
        family, kind = name, types.get(name, "untyped")
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
                family, kind = base, types[base]
        if name.endswith("_total") and types.get(name[:-6]) == "counter":
            kind = "counter"
        out.append((family, kind, labels))
    return out


def series_of(texts, norm):
    """{Series: type} over every target that answered."""
    out = {}
    for role, text in texts.items():
        if text is None:
            continue
        for family, kind, labels in parse(text):
            labels = {k: norm.value(k, v) for k, v in labels.items() if k not in BUCKET_KEYS}
            out[Series(family, role, labels)] = kind
    return out


def describe_step(name, texts, series, prev, norm):
    families = {}
    for s, kind in series.items():
        f = families.setdefault(s.family, {"type": kind, "label_keys": set(), "targets": set(), "node_address": set()})
        f["label_keys"].update(s.labels)
        f["targets"].add(s.role)
        if "NodeAddress" in s.labels:
            f["node_address"].add(s.labels["NodeAddress"])
    for f in families.values():
        for k in ("label_keys", "targets", "node_address"):
            f[k] = sorted(f[k])
    return {
        "step": name,
        "targets": {role: ("up" if t is not None else "down") for role, t in sorted(texts.items())},
        "families": dict(sorted(families.items())),
        "appeared": sorted(str(s) for s in series if s not in prev),
        "vanished": sorted(str(s) for s in prev if s not in series),
    }


def is_dashboard(texts):
    """Whether a head target that is no node's is the dashboard's (else the autoscaler's)."""
    text = next(iter(texts.values())) or ""
    return "autoscaler_" not in text


def write_json(path, obj):
    """Sorted keys, one list item per line: small diffs when a re-recording changes a fact."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
