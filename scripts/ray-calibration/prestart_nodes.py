#!/usr/bin/env python3
"""Which nodes' raylets prestart workers for the first driver: a head of 2 CPUs and a
second node of 2 at 127.0.0.2 (`ray.cluster_utils.Cluster`, one machine), and the
idle task workers each lists (`ray.util.state.list_workers`) 4 s after the driver
connected. Behind the model's `prestart_worker_first_driver`, which prestarts on the
head only (`sim/raylet/node_cpu.rs`, `NodeMachine::of`).

  python prestart_nodes.py --out runs/prestart-nodes.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import fresh_process_row, ray_stop, run_probe  # noqa: E402

DRIVER = r"""
import collections, json, time
import ray
from ray.cluster_utils import Cluster
from ray.util.state import list_nodes, list_workers

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
cluster.add_node(num_cpus=2, node_ip_address="127.0.0.2")
cluster.wait_for_nodes()
ray.init(address=cluster.address, logging_level="ERROR")
time.sleep(4)
heads = {n.node_id: n.is_head_node for n in list_nodes()}
idle = collections.Counter()
for w in list_workers(filters=[("worker_type", "=", "WORKER")], limit=1000):
    if w.is_alive:
        idle["head" if heads.get(w.node_id) else "second_node"] += 1
print(json.dumps({"idle_workers_head": idle["head"], "idle_workers_second_node": idle["second_node"]}))
ray.shutdown()
cluster.shutdown()
"""


def one(run):
    ray_stop()
    try:
        row = fresh_process_row(DRIVER, timeout=180)
    finally:
        ray_stop()
    row["run"] = run
    return row


if __name__ == "__main__":
    run_probe(__doc__, lambda: [one(r) for r in range(3)], lambda row: row)
