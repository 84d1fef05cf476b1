"""What an all-reduce rank's CPU is spent on: user and system CPU per gloo all-reduce call.

W ranks all-reduce a float32 tensor of SIZE bytes CALLS times (after 3 untimed calls), each
reading its own ``os.times()`` before and after; the launcher prints, per W, the mean per call
and per rank of user CPU, system (kernel) CPU and the wall time of the slowest rank. Two
networks:

- ``lab``: rank r on lab host r+1 (``sgdsim lab up --hosts W+1 --bandwidth ...`` first; root);
  every byte crosses veth, the bridge and a tbf-shaped port, on the machine's shared cores;
- ``loopback``: the same ranks on 127.0.0.1, no shaping (no root).

    python examples/lab/gloo_cpu.py loopback --workers 2,4,8
    sgdsim lab up --hosts 9 --bandwidth 200Mbps && python examples/lab/gloo_cpu.py lab --workers 2,4,8

Needs torch. Measure on a quiet machine: other processes' CPU lands in the ranks' wall time.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import time

SUBNET = "10.77.0"  # the lab's addresses (sgdsim.lab.cluster)


def rank_main(rank: int, world: int, size: int, calls: int) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # as every lab process
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    t = torch.ones(size // 4)
    for _ in range(3):
        dist.all_reduce(t)
    dist.barrier()
    t0, w0 = os.times(), time.monotonic()
    for _ in range(calls):
        dist.all_reduce(t)
    w1, t1 = time.monotonic(), os.times()
    print(json.dumps({"user_s": (t1.user - t0.user) / calls, "sys_s": (t1.system - t0.system) / calls,
                      "wall_s": (w1 - w0) / calls}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def launch(world: int, size: int, calls: int, lab: bool) -> dict:
    env = {**os.environ, "MASTER_PORT": str(random.randint(30000, 39999)), "OMP_NUM_THREADS": "1",
           "MASTER_ADDR": f"{SUBNET}.2" if lab else "127.0.0.1", "GLOO_SOCKET_IFNAME": "eth0" if lab else "lo"}
    procs = []
    for r in range(world):
        argv = [sys.executable, __file__, "--rank", str(r), "--world", str(world), "--size", str(size),
                "--calls", str(calls)]
        procs.append(subprocess.Popen((["ip", "netns", "exec", f"sgdsim-h{r + 1}"] if lab else []) + argv,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    recs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode:
            sys.exit(f"rank failed: {err.strip().splitlines()[-1] if err.strip() else p.returncode}")
        recs.append(json.loads(out.strip().splitlines()[-1]))
    wire = 2 * (world - 1) / world * size  # what each rank sends, and receives (TPDS Eq. 11)
    user = sum(r["user_s"] for r in recs) / world
    sys_ = sum(r["sys_s"] for r in recs) / world
    return {"network": "lab" if lab else "loopback", "W": world, "size_bytes": size,
            "user_ms": round(user * 1e3, 2), "sys_ms": round(sys_ * 1e3, 2),
            "wall_ms": round(max(r["wall_s"] for r in recs) * 1e3, 1),
            "cpu_ns_per_byte_moved": round((user + sys_) / (2 * wire) * 1e9, 2),
            "goodput_Mbps": round(wire * 8 / max(r["wall_s"] for r in recs) / 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("network", nargs="?", choices=["lab", "loopback"])
    ap.add_argument("--workers", default="2,4,8", help="rank counts (default: 2,4,8)")
    ap.add_argument("--size", type=int, default=4 << 20, help="bytes per call (default: 4 MiB)")
    ap.add_argument("--calls", type=int, default=15, help="timed calls per rank count (default: 15)")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.rank is not None:
        rank_main(a.rank, a.world, a.size, a.calls)
        return
    if a.network is None:
        ap.error("name the network: lab or loopback")
    for w in (int(x) for x in a.workers.split(",")):
        print(json.dumps(launch(w, a.size, a.calls, a.network == "lab")), flush=True)


if __name__ == "__main__":
    main()
