"""Golden outputs: what the command line answers, to hold a refactor against.

Runs ``sgdsim`` (the command line, so the outputs do not depend on the Python API's shape)
over the bundled profiles for every architecture x mode x sharing, the coarse models, the
multi-device topologies, ``plan``, ``optimize`` and the replays of the committed validation
grids, and writes each answer to OUT/<name>.json (wall times and other clock readings set to
0). Record before a change, again after, and compare:

    python tools/golden.py -o golden-before          # ~4 min on 2 cores, once compiled
    python tools/golden.py -o golden-after --only predict-   # a subset, by name prefix
    python tools/golden.py --compare golden-before golden-after --ignore margin_source
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time

R50 = "examples/profiles/resnet50.json"
VGG = "examples/profiles/vgg16-nooverlap.json"
ALEX = "examples/profiles/alexnet.json"
FIXED = ["--steps", "40", "--replications", "2", "--format", "json", "-q"]
GRIDS = ("async", "cnn", "allreduce", "2ps", "widecnn", "heldout200", "heldout-margin", "torch", "torch-b", "torch-c")


def cases() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for mode in ("async", "sync"):
        for sharing in ("default", "ps", "fcfs", "hybrid"):
            extra = [] if sharing == "default" else ["--sharing", sharing]
            out[f"predict-ps-{mode}-{sharing}"] = ["predict", VGG, "--workers", "1,3,6", "--mode", mode,
                                                   "--bandwidth", "1Gbps", *extra, *FIXED]
    out["predict-ps-async-http2"] = ["predict", ALEX, "--workers", "2,4", "--streams", "http2",
                                     "--window", "28MB", *FIXED]
    out["predict-ps-async-2ps"] = ["predict", VGG, "--workers", "2,4", "--ps-count", "2", *FIXED]
    out["predict-ps-sync-2ps"] = ["predict", VGG, "--workers", "2,4", "--ps-count", "2", "--mode",
                                  "sync", *FIXED]
    out["predict-ps-async-overhead"] = ["predict", VGG, "--workers", "2,4", "--overhead-alpha", "1e-9",
                                        "--overhead-beta", "1ms", *FIXED]
    out["predict-ps-async-flowcap"] = ["predict", VGG, "--workers", "2,4", "--flow-cap", "500Mbps",
                                       *FIXED]
    out["predict-ps-async-join"] = ["predict", VGG, "--workers", "2,4", "--join-boost", "1.4,1.2",
                                    "--join-after", "5ms", "--join-delay", "2ms", "--share-cv", "0.2",
                                    *FIXED]
    out["predict-ps-gpus"] = ["predict", R50, "--workers", "8,16", "--gpus-per-node", "4",
                              "--intra-bandwidth", "100GB/s", "--bandwidth", "10Gbps", *FIXED]
    for coll in ("ring", "hierarchical"):
        out[f"predict-allreduce-{coll}"] = ["predict", R50, "--workers", "4,8", "--arch", "allreduce",
                                            "--mode", "sync", "--collective", coll, "--gpus-per-node",
                                            "4", "--intra-bandwidth", "150GB/s", "--bandwidth",
                                            "100Gbps", *FIXED]
    out["predict-allreduce-buckets"] = ["predict", R50, "--workers", "2,4", "--arch", "allreduce",
                                        "--mode", "sync", "--bucket-size", "25MB", "--ring-latency",
                                        "1ms", *FIXED]
    for mode, arch in (("async", "ps"), ("sync", "ps"), ("sync", "allreduce")):
        out[f"predict-all-{mode}-{arch}"] = ["predict", R50, "--workers", "1,2,4,8", "--mode", mode,
                                             "--arch", arch, "--model", "all", *FIXED]
    out["predict-coarse"] = ["predict", "--coarse", "size=102MB,fwd=182ms,bwd=261ms,batch=128",
                             "--workers", "1-64", "--model", "coarse", "--format", "json", "-q"]
    out["predict-hardware"] = ["predict", VGG, "--workers", "2,4", "--hardware",
                               "examples/grids/hardware-lab-100mbps.json", *FIXED]
    out["plan"] = ["plan", R50, "--dataset-size", "1.28M", "--target-epoch-time", "2h", "--workers",
                   "1-16", "--format", "json", "-q"]
    out["optimize"] = ["optimize", "vgg16", "--machines", "32", "--cores", "8", "--latency", "50us",
                       "--format", "json", "-q"]
    return out


def _scrub(obj):
    """Clock readings differ run to run: zero them."""
    if isinstance(obj, dict):
        return {k: (0 if k in ("wall_s", "elapsed_s", "generated_at") else _scrub(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def run_case(name: str, argv: list[str], out: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "sgdsim.cli", *argv], capture_output=True, text=True)
    try:
        body = _scrub(json.loads(proc.stdout))
    except json.JSONDecodeError:
        body = {"stdout": proc.stdout}
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({"argv": argv, "rc": proc.returncode, "stderr_last": proc.stderr.strip().splitlines()[-1:],
                   "out": body}, f, indent=1, sort_keys=True)


def replay_grids(out: str) -> None:
    from sgdsim.validate.cli import replay
    from sgdsim.validate.grid import load_grid

    for g in GRIDS:
        folder = os.path.join(out, "replay", g)
        replay(load_grid(f"examples/grids/lab-{g}.toml"), f"docs/validation/{g}/points.csv", folder)
        rows = list(csv.DictReader(open(os.path.join(folder, "points.csv"))))
        for r in rows:
            r.pop("wall_s", None)
        with open(os.path.join(out, f"replay-{g}.json"), "w") as f:
            json.dump(rows, f, indent=1, sort_keys=True)


def _without(obj, keys: set[str]):
    if isinstance(obj, dict):
        return {k: _without(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_without(v, keys) for v in obj]
    return obj


def compare(before: str, after: str, ignore: set[str]) -> int:
    """Each answer of ``before`` against ``after``'s, exactly, but for the ``ignore``d keys."""
    differ = 0
    for name in sorted(f for f in os.listdir(before) if f.endswith(".json")):
        other = os.path.join(after, name)
        if not os.path.exists(other):
            print(f"{name}: missing in {after}")
            differ += 1
            continue
        same = _without(json.load(open(os.path.join(before, name))), ignore) == \
            _without(json.load(open(other)), ignore)
        print(f"{name}: {'identical' if same else 'DIFFERENT'}")
        differ += not same
    print(f"{differ} of the answers differ")
    return 1 if differ else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output")
    ap.add_argument("--only", default="", help="run only the cases whose name starts with this")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--ignore", action="append", default=[], help="a key to leave out of --compare")
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare, set(args.ignore)))
    if not args.output:
        ap.error("give -o OUT (or --compare BEFORE AFTER)")
    os.makedirs(args.output, exist_ok=True)
    for name, argv in cases().items():
        if name.startswith(args.only):
            t = time.time()
            run_case(name, argv, args.output)
            print(f"{name}: {time.time() - t:.1f} s", flush=True)
    if "replay".startswith(args.only) or not args.only:
        replay_grids(args.output)
        print("replays done", flush=True)


if __name__ == "__main__":
    main()
