#!/usr/bin/env python3
"""What a placement group's creation costs for each node it spans: the suite's
`placement_group` rows have groups of two 1-CPU bundles on one node (PACK) or two
(SPREAD), and Ray's SPREAD ones take longer. Ray's GCS prepares a group's bundles with
each raylet it spans and then commits them with each, so a group spanning more nodes
exchanges more messages.

Four nodes of 2 CPUs (ray.cluster_utils.Cluster). Each way below makes a group, waits
for `pg.ready()`, removes it and waits for its CPUs to come back (as the suite does),
the ways in turn, 5 untimed rounds first, then 20 timed ones. A row has the way, the
nodes its groups spanned (read from the placement group table) and the median time to
ready with the samples.

  python pg_nodes.py --out runs/pg-nodes.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import begin_probe, in_ms, ray_stop, run_probe, wait_for_cpus_back, with_medians  # noqa: E402

# (strategy, bundles): the nodes each spans on four nodes of 2 CPUs.
WAYS = (("PACK", 1), ("PACK", 2), ("STRICT_SPREAD", 2), ("STRICT_SPREAD", 3), ("STRICT_SPREAD", 4))
UNTIMED, TIMED = 5, 20


def one_group(ray, make_group, remove, table, strategy, bundles, total_cpus):
    t0 = time.perf_counter()
    pg = make_group([{"CPU": 1}] * bundles, strategy=strategy)
    ray.get(pg.ready(), timeout=120)
    seconds = time.perf_counter() - t0
    nodes = len(set(table(pg)["bundles_to_node_id"].values()))
    remove(pg)
    wait_for_cpus_back(ray, total_cpus)
    return seconds, nodes


def rows():
    begin_probe()
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    for _ in range(3):
        cluster.add_node(num_cpus=2)
    ray.init(address=cluster.address, logging_level="ERROR")
    cluster.wait_for_nodes()
    try:
        total = ray.cluster_resources()["CPU"]
        samples = {way: [] for way in WAYS}
        spans = {way: set() for way in WAYS}
        for i in range(UNTIMED + TIMED):
            for strategy, bundles in WAYS:
                s, n = one_group(ray, placement_group, remove_placement_group, placement_group_table,
                                 strategy, bundles, total)
                if i >= UNTIMED:
                    samples[(strategy, bundles)].append(s)
                    spans[(strategy, bundles)].add(n)
        return [
            with_medians({"strategy": st, "bundles": b, "nodes": sorted(spans[(st, b)])}, {"ready": samples[(st, b)]})
            for st, b in WAYS
        ]
    finally:
        ray.shutdown()
        cluster.shutdown()
        ray_stop()


if __name__ == "__main__":
    run_probe(__doc__, rows, in_ms)
