"""``sgdsim optimize``: the KDD'15 scalability optimizer on a bundled or given layer profile."""
from __future__ import annotations

import json
from importlib import resources

from ..units import (format_bps, format_duration_s, parse_bandwidth_bps, parse_duration_s,
                     parse_number)
from ..progress import say

IMAGENET = 1_281_167


def register(sub) -> dict:
    p = sub.add_parser(
        "optimize", help="KDD'15 scalability optimizer: model/data parallelism and parameter "
                         "servers for N machines",
        description="Choose parameter servers, model replicas, workers per replica and, per layer, "
                    "partitions, threads and replicas that minimise the epoch time (KDD'15 §4-5), "
                    "for a cluster of identical CPU machines like this one.")
    p.add_argument("model", help="a bundled PipeDream layer profile (alexnet, vgg16, resnet50, ...) "
                                 "or the path of a PipeDream layers CSV")
    p.add_argument("--machines", type=int, required=True, metavar="N", help="machines in the cluster")
    p.add_argument("--cores", type=int, required=True, metavar="K", help="cores per machine")
    p.add_argument("--batch-size", default=None,
                   help="the batch the layer file's activation sizes were measured at "
                        "(default: known for the bundled models, required for a CSV)")
    p.add_argument("--dataset-size", default=IMAGENET,
                   help=f"samples per epoch (default {IMAGENET:,}, ImageNet-1k)")
    p.add_argument("--read-every", default=None, metavar="N_READ",
                   help="a replica reads the weights every N_READ samples (default: the batch size)")
    p.add_argument("--bandwidth", default=None, help="NIC bandwidth C_nbw (default 10Gbps, or --hardware's)")
    p.add_argument("--latency", default=None, help="network latency C_ncost, e.g. 50us (default 0, or --hardware's)")
    p.add_argument("--hardware", default=None, metavar="FILE.json", help="the network as sgdsim netbench measured it (default: nominal)")
    p.add_argument("--max-layer-replicas", default=None, metavar="R",
                   help="cap on each layer's replicas inside a model replica (the model charges "
                        "nothing for keeping them in step; 1 = no layer replication; default: no cap)")
    p.add_argument("--reads", default="worst", choices=["worst", "best"],
                   help="weight reads as Eq. 10 (every replica from one server) or Eq. 11")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--constants", default=None, metavar="FILE.json",
                     help="C_muladd, C_act, C_err, C_interf (default: bundled, measured on a 2-core x86 box)")
    src.add_argument("--measure", action="store_true", help="run the Fig. 5 micro-benchmark here first (~3 s)")
    p.add_argument("--seed", default=0, help="data of the micro-benchmark, 0 to 2^63-1")
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    return {"optimize": cmd_optimize}


def cmd_optimize(args) -> int:
    from ..progress import Progress
    from .layers import load_layers
    from .search import Problem, optimize

    counts = _counts(args)  # every option checked before the layers are read or measured
    layers, batch = load_layers(args.model, counts["batch_size"])
    prob = Problem(tuple(layers), args.machines, args.cores, _constants(args, counts["seed"]),
                   _network(args), counts["dataset_size"],
                   batch if counts["read_every"] is None else counts["read_every"],
                   args.reads == "worst", counts["max_layer_replicas"])
    bar = Progress(1, "optimizing")
    try:
        sol = optimize(prob, lambda done, total: (setattr(bar, "total", total), bar.advance()))
    finally:
        bar.close()
    print(to_json(args.model, prob, sol) if args.format == "json" else to_text(args.model, prob, sol))
    return 0


MAX_SAMPLES = 10**12  # per epoch, or between two weight reads


def _counts(args) -> dict:
    """The whole-number options, ASCII digits within bounds (None where not given)."""
    from ..spec.limits import MAX_SEED
    from .layers import MAX_BATCH
    from .search import MAX_CORES, MAX_MACHINES

    bounds = {"batch_size": (1, MAX_BATCH), "dataset_size": (1, MAX_SAMPLES),
              "read_every": (1, MAX_SAMPLES), "max_layer_replicas": (1, MAX_MACHINES * MAX_CORES),
              "seed": (0, MAX_SEED)}
    return {dest: None if getattr(args, dest) is None else
            parse_number(getattr(args, dest), f"--{dest.replace('_', '-')}", lo=lo, hi=hi,
                         integer=True)
            for dest, (lo, hi) in bounds.items()}


def _constants(args, seed: int):
    from .model import load_constants

    if args.measure:
        import numpy as np

        from .microbench import measure_constants

        say("measuring C_muladd, C_act, C_err and C_interf (KDD'15 Fig. 5) ...")
        return measure_constants(np.random.default_rng(seed), max_threads=args.cores)
    return load_constants(args.constants or resources.files("sgdsim") / "data" / "kdd_constants.json")


def _network(args):
    from ..hardware import load_hardware
    from .model import Network

    hw = load_hardware(args.hardware) if args.hardware else None
    bw = parse_bandwidth_bps(args.bandwidth) if args.bandwidth else (hw.bandwidth_bps if hw else 10e9)
    lat = parse_duration_s(args.latency) if args.latency else (hw.latency_s if hw else 0.0)
    return Network(bw, lat)


def _runs(values: list[tuple]) -> list[tuple[int, int, tuple]]:
    """Consecutive equal values as (first, last, value), 1-based."""
    out: list[tuple[int, int, tuple]] = []
    for i, v in enumerate(values, start=1):
        if out and out[-1][2] == v:
            out[-1] = (out[-1][0], i, v)
        else:
            out.append((i, i, v))
    return out


def to_text(model: str, prob, sol) -> str:
    cfg = sol.config
    per_layer = list(zip(cfg.P, cfg.H, cfg.R))
    lines = [f"KDD'15 scalability optimizer: {model}, {len(prob.layers)} layers, {prob.machines} "
             f"machines x {prob.cores} cores, {format_bps(prob.network.bandwidth_bps)}, "
             f"{prob.n_sample:,} samples per epoch, weights read every {prob.n_read} samples",
             f"Best: {cfg.n_ps} parameter server(s), {cfg.n_mr} model replica(s) x {cfg.n_wr} "
             f"worker(s): epoch {format_duration_s(sol.epoch_time_s)} "
             f"(weight reads as Eq. {'10, worst case' if prob.worst else '11, best case'})",
             f"Weight reads per replica: {format_duration_s(sol.read_min_s)} at best (Eq. 11), "
             f"{format_duration_s(sol.read_max_s)} at worst (Eq. 10)",
             "Per layer: P partitions, H threads, R replicas:"]
    for first, last, (P, H, R) in _runs(per_layer):
        span = f"layer {first}" if first == last else f"layers {first}-{last}"
        lines.append(f"  {span}: P={P} H={H} R={R}")
    return "\n".join(lines)


def to_json(model: str, prob, sol) -> str:
    cfg = sol.config
    return json.dumps({
        "model": model, "machines": prob.machines, "cores": prob.cores,
        "bandwidth_bps": prob.network.bandwidth_bps, "latency_s": prob.network.latency_s,
        "dataset_size": prob.n_sample, "read_every": prob.n_read,
        "reads": "worst" if prob.worst else "best",
        "n_ps": cfg.n_ps, "n_mr": cfg.n_mr, "n_wr": cfg.n_wr, "epoch_time_s": sol.epoch_time_s,
        "read_min_s": sol.read_min_s, "read_max_s": sol.read_max_s,
        "layers": [{"name": layer.name, "P": P, "H": H, "R": R}
                   for layer, P, H, R in zip(prob.layers, cfg.P, cfg.H, cfg.R)],
    }, indent=2)
