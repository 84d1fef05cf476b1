"""Values and file mutators the fuzzer draws from: good and bad option values, mutated
profiles, hardware files, CSVs and PipeDream graphs."""
from __future__ import annotations

import copy
import gzip
import json
import math
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALEXNET = ROOT / "examples" / "profiles" / "alexnet.json"
GRAPH = ROOT / "tests" / "data" / "pipedream" / "alexnet.graph.txt"
MEASURED = ROOT / "examples" / "calibrate" / "measured-async.csv"
HARDWARE = ROOT / "examples" / "grids" / "hardware-lab-100mbps.json"
LAYERS = ROOT / "src" / "sgdsim" / "data" / "pipedream" / "alexnet.layers.csv"

CLASSES = ("traceback", "hang", "nan_row", "multi_line_error", "bad_exit", "overwrite", "ok")
NONFINITE = re.compile(r"(?i)(?<![a-z0-9_])(nan|inf|infinity)(?![a-z0-9_])")
PRECIOUS = "precious: must not be overwritten without --force\n"
TINY = ["--steps", "2", "--warmup", "0", "--replications", "1", "--jobs", "1"]
QUICK_TIMEOUT_S = 10.0  # a family's timeout after HANG_CAP hangs: one more hang costs less
HANG_CAP = 2

# ----------------------------------------------------------------------------- value pools

BIG_INT = "99999999999999999999"
NUMERIC_BAD = ["", " ", "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "-1e308", "-1", "0",
               BIG_INT, "1e-300", "x", "1,2", "0x10", "1_0", "--", "½", "1e", ".", "-0"]
BW_GOOD = ["10Gbps", "1Gbps", "100Mbps", "25Gbps", "1.5Gbps", "10 Gbps", "1e9bps"]
BW_BAD = ["10Gbs", "5XB", "", "-1Gbps", "0bps", "nan", "inf", "1e308", "1e308bps", "1e-300bps",
          "1kbps", "10", "Gbps", "10GBps", "nanGbps", "infbps", "-0Gbps", BIG_INT + "bps",
          "10Gbps,1Gbps", "1Pbps", "2Pbps"]
DUR_GOOD = ["0", "0s", "2ms", "0.2ms", "1us", "50us", "1s"]
DUR_BAD = ["", "-1ms", "nan", "nans", "inf", "infs", "1e308s", "5XB", "1h1m", "2 parsecs",
           "1e-300s", BIG_INT + "s", "ms", "-0s", "2h"]
SIZE_GOOD = ["28MB", "1MB", "64KB", "1MiB", "1GB"]
SIZE_BAD = ["", "0", "0B", "-1MB", "5XB", "nan", "nanMB", "inf", "1e308B", "1e308", BIG_INT,
            "1B", "MB", "1.5.2MB"]
WORKERS_GOOD = ["1", "2", "1,2", "1-2", "1-3", "3", "2,1", "1,1"]
WORKERS_BAD = ["0", "-1", "1-", "-", "", "x", BIG_INT, "1-99999999999999", "99999999999999",
               "5000", "100000", "1025", "2-1", "1.5", "1,,2", "nan", "inf", "1e3", "0-2",
               "1-2-3", ",", "1, 2", "٣"]
FRACTION_GOOD = ["0", "0.3", "0.5", "1"]
SEED_VALUES = ["0", "1", "42", "9223372036854775807", "9223372036854775808", "-1",
               "18446744073709551616", "1.5", "", "x", "1e3"]

PREDICT_OPTIONS: dict[str, list[str]] = {
    "--workers": WORKERS_GOOD * 2 + WORKERS_BAD,
    "--bandwidth": BW_GOOD * 2 + BW_BAD,
    "--mode": ["async", "sync", "sync", "SYNC", ""],
    "--arch": ["ps", "allreduce", "allreduce", "ring"],
    "--model": ["fine", "coarse", "coarse", "lin", "cynthia", "all", "Coarse"],
    "--sharing": ["ps", "fcfs", "hybrid", "threshold", "maxmin", ""],
    "--fcfs-weight": FRACTION_GOOD + NUMERIC_BAD + ["1.5", "-0.1"],
    "--share-cv": ["0", "0.3", "2", "9.99", "10"] + NUMERIC_BAD,
    "--two-way-penalty": ["0", "0.1", "0.5", "1", "1.5"] + NUMERIC_BAD,
    "--ring-latency": DUR_GOOD + DUR_BAD,
    "--rho-threshold": ["0.6", "0.5", "1", "0.01", "2", "-1"] + NUMERIC_BAD,
    "--flow-cap": BW_GOOD + BW_BAD,
    "--streams": ["fifo", "http2", "http3"],
    "--window": SIZE_GOOD + SIZE_BAD,
    "--order": ["profiled", "tic", "reverse", "random", "sorted"],
    "--overhead-alpha": ["0", "1e-9", "1e-10", "0.001", "0.002"] + NUMERIC_BAD,
    "--overhead-beta": DUR_GOOD + DUR_BAD,
    "--ps-count": ["1", "2", "3", "8", "9", "100", "1000"] + NUMERIC_BAD,
    "--seed": SEED_VALUES,
    "--jitter": ["0", "0.1", "0.5", "9.9", "10"] + NUMERIC_BAD,
    "--warmup": ["0", "1", "2", "10001"] + NUMERIC_BAD,
    "--steps": ["1", "2", "3", "100001", "auto", "Auto", "0"] + NUMERIC_BAD,
    "--replications": ["1", "2", "1001", "auto"] + NUMERIC_BAD,
    "--jobs": ["1", "2", "257", "1000"] + NUMERIC_BAD,
    "--backend": ["local", "dask", "mpi"],
    "--scheduler": ["", "tcp://127.0.0.1:1", "x"],
    "--format": ["table", "csv", "json", "xml"],
}

PLAN_OPTIONS: dict[str, list[str]] = {
    "--dataset-size": ["1000", "1.28M", "10k", "1", "1e6"] + NUMERIC_BAD + ["1.5", "-5k"],
    "--workers": ["1-4", "1,2", "2", "1-8"] + WORKERS_BAD,
    "--bandwidth": BW_GOOD + BW_BAD,
    "--strategies": ["async-ps", "sync-ps", "allreduce", "async-ps,sync-ps,allreduce",
                     "allreduce,allreduce", "", "ring", ",", "async-ps,"],
    "--max-ps": ["1", "2", "4", "9"] + NUMERIC_BAD,
    "--price-per-node-hour": ["1", "0.5", "2.5", "0"] + NUMERIC_BAD,
    "--ps-price-per-node-hour": ["1", "0.1", "0"] + NUMERIC_BAD,
    "--target-epoch-time": ["90s", "30min", "2h", "1ms"] + DUR_BAD,
    "--budget-per-epoch": ["1", "0.001", "100"] + NUMERIC_BAD,
    "--knee": ["5%", "1%", "50%", "0%", "100%", "5", "-5%", "nan%", "inf%", "", "%", "1e308%"],
    "--finalists": ["1", "2", "0", "-1", BIG_INT, "x", ""],
    "--seed": SEED_VALUES,
    "--jobs": ["1", "0", "-1", BIG_INT],
    "--format": ["table", "json", "csv"],
}

OPTIMIZE_OPTIONS: dict[str, list[str]] = {
    "--machines": ["1", "2", "3", "4", "8", "16", "32"] * 2 + NUMERIC_BAD + ["100000"],
    "--cores": ["1", "2", "4", "8"] * 2 + NUMERIC_BAD + ["100000"],
    "--batch-size": ["1", "32", "256", "0", "-1", "nan", BIG_INT, "", "x"],
    "--dataset-size": ["1", "1000", "1281167", "0", "-1", BIG_INT, "nan", "1e6", ""],
    "--read-every": ["1", "32", "256", "0", "-1", BIG_INT, "nan", ""],
    "--bandwidth": BW_GOOD + BW_BAD,
    "--latency": DUR_GOOD + DUR_BAD,
    "--max-layer-replicas": ["1", "2", "4", "0", "-1", BIG_INT, "nan", ""],
    "--reads": ["worst", "best", "average"],
    "--seed": SEED_VALUES,
    "--format": ["table", "json", "csv"],
}

OPTIMIZE_MODELS = ["alexnet", "vgg16", "resnet50", "nosuchmodel", "", "ALEXNET", "../alexnet"]


# ----------------------------------------------------------------------------- input files

def _paths(obj, prefix=()):
    """Every (path, value) of a JSON tree."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _delete(obj, path):
    for k in path[:-1]:
        obj = obj[k]
    del obj[path[-1]]


BAD_VALUES = [math.nan, math.inf, -math.inf, -1, -1e-9, 0, 1e308, 1.7e308, 10 ** 30, 2 ** 63,
              -(2 ** 63), "x", "", "1", "0.5", None, True, False, [], [[[]]], {}, {"a": 1},
              [1, 2], 0.5, 1e-300, 1000, "fwd:node2", ["fwd:node2", "fwd:node2"]]


def mutate_json(rng: random.Random, base, n_mutations: int):
    """``base`` with a few random structural and value mutations; returns (tree, log)."""
    tree = copy.deepcopy(base)
    log = []
    for _ in range(n_mutations):
        paths = [p for p, _ in _paths(tree) if p]
        if not paths:
            break
        path = rng.choice(paths)
        what = rng.choice(["replace", "replace", "replace", "drop", "type", "dup", "number"])
        try:
            if what == "replace":
                value = rng.choice(BAD_VALUES)
                _set(tree, path, copy.deepcopy(value))
            elif what == "drop":
                _delete(tree, path)
                value = None
            elif what == "type":
                value = rng.choice([[], {}, "str", 7, None, [[[[]]]]])
                _set(tree, path, value)
            elif what == "dup":  # an op or a step twice, or a list item twice
                parent_path, key = path[:-1], path[-1]
                parent = tree
                for k in parent_path:
                    parent = parent[k]
                if isinstance(parent, list):
                    parent.insert(key, copy.deepcopy(parent[key]))
                value = "dup"
            else:  # scale a number: the kind of value that is valid but extreme
                cur = tree
                for k in path:
                    cur = cur[k]
                if isinstance(cur, (int, float)) and not isinstance(cur, bool):
                    value = cur * rng.choice([0, -1, 1e-300, 1e-12, 1e12, 1e300, 1e308])
                    _set(tree, path, value)
                else:
                    value = "skip"
            log.append(f"{what} {'/'.join(map(str, path))} = {value!r}"[:200])
        except (KeyError, IndexError, TypeError):
            pass
    return tree, log


def profile_text(rng: random.Random, base: dict) -> tuple[bytes, list[str]]:
    """A broken or extreme profile file's bytes."""
    kind = rng.choices(
        ["mutate", "mutate_many", "truncate", "nested", "nonutf8", "gzip_bad", "scalar",
         "huge_number", "duplicate_keys", "ps_gap", "extreme_valid", "empty"],
        weights=[30, 10, 10, 3, 3, 3, 3, 5, 3, 5, 20, 2])[0]
    text = json.dumps(base)
    if kind in ("mutate", "mutate_many"):
        tree, log = mutate_json(rng, base, 1 if kind == "mutate" else rng.randint(2, 6))
        return json.dumps(tree).encode(), [kind] + log
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return text[:cut].encode(), [f"truncate at {cut}"]
    if kind == "nested":
        depth = rng.choice([1000, 100000, 1000000])
        opener = rng.choice(["[", '{"a":'])
        return (opener * depth).encode(), [f"nested {opener} x {depth}"]
    if kind == "nonutf8":
        cut = rng.randrange(len(text))
        return text[:cut].encode() + b"\xff\xfe\x80" + text[cut:].encode(), ["non-utf8 bytes"]
    if kind == "gzip_bad":
        gz = gzip.compress(text.encode())
        cut = rng.randrange(2, len(gz))
        return gz[:cut], [f"truncated gzip at {cut}"]
    if kind == "scalar":
        value = rng.choice(["[]", "null", "1", '"x"', "NaN", "{}", "true"])
        return value.encode(), [f"top-level {value}"]
    if kind == "huge_number":  # JSON numbers that Python reads as inf or huge ints
        tree, _ = mutate_json(random.Random(0), base, 0)
        paths = [p for p, v in _paths(tree) if isinstance(v, (int, float)) and not isinstance(v, bool)]
        path = rng.choice(paths)
        marker = "__HUGE__"
        _set(tree, path, marker)
        lit = rng.choice(["1e999", "-1e999", "1" + "0" * 5000, "NaN", "Infinity", "-Infinity",
                          "1e-999", "123456789012345678901234567890"])
        return json.dumps(tree).replace(f'"{marker}"', lit).encode(), [
            f"{'/'.join(map(str, path))} = {lit[:30]}"]
    if kind == "duplicate_keys":
        cut = text.index('"job"')
        return (text[:cut] + '"job": {}, ' + text[cut:]).encode(), ["duplicate job key"]
    if kind == "ps_gap":
        tree = copy.deepcopy(base)
        ops = [o for o in tree["ops"] if o["resource"] in ("uplink", "downlink", "ps")]
        op = rng.choice(ops)
        op["ps"] = rng.choice([1, 2, 1000, 10 ** 6, 2 ** 63])
        return json.dumps(tree).encode(), [f"op {op['id']} ps = {op['ps']}"]
    if kind == "extreme_valid":  # still a valid profile, with extreme numbers
        tree = copy.deepcopy(base)
        log = []
        for _ in range(rng.randint(1, 4)):
            target = rng.choice(["size", "duration", "batch", "bandwidth", "zero_all"])
            if target == "size":
                op = rng.choice([o for o in tree["ops"] if o["kind"] == "comm"])
                op["size_bytes"] = rng.choice([0, 1e-300, 1e300, 1e308, 10 ** 30, 0.5])
                log.append(f"{op['id']} size_bytes={op['size_bytes']}")
            elif target == "duration":
                step = tree["steps"][0]["duration_s"]
                key = rng.choice(sorted(step))
                step[key] = rng.choice([0, 1e-300, 1e300, 1e308, 1e6, 1e-12])
                log.append(f"{key} duration={step[key]}")
            elif target == "batch":
                tree["job"]["batch_size"] = rng.choice([1, 2 ** 31, 2 ** 63, 10 ** 30])
                log.append(f"batch={tree['job']['batch_size']}")
            elif target == "bandwidth":
                tree["job"]["bandwidth_bps"] = rng.choice([1e-300, 1e308, 1, 10 ** 30])
                log.append(f"job bandwidth={tree['job']['bandwidth_bps']}")
            else:
                for k in tree["steps"][0]["duration_s"]:
                    tree["steps"][0]["duration_s"][k] = 0
                for o in tree["ops"]:
                    if o["kind"] == "comm" and rng.random() < 0.5:
                        o["size_bytes"] = 0
                log.append("all durations 0")
        return json.dumps(tree).encode(), ["extreme_valid"] + log
    return b"", ["empty file"]


def csv_text(rng: random.Random) -> tuple[bytes, list[str]]:
    good = MEASURED.read_bytes()
    kind = rng.choice(["good", "nonutf8", "nan", "neg", "header", "empty", "huge", "truncate",
                       "dups", "one", "zero", "extra_cols", "bom", "blank_lines"])
    if kind == "good":
        return good, [kind]
    if kind == "nonutf8":
        return b"workers,throughput\n1,\xff\xfe100\n", [kind]
    if kind == "nan":
        v = rng.choice(["nan", "inf", "-inf", "NaN", "Infinity"])
        return f"workers,throughput\n1,{v}\n2,10\n".encode(), [f"throughput {v}"]
    if kind == "neg":
        return b"workers,throughput\n-1,5\n0,3\n2,-4\n", [kind]
    if kind == "header":
        return b"w,t\n1,2\n", [kind]
    if kind == "empty":
        return b"", [kind]
    if kind == "huge":
        return f"workers,throughput\n{BIG_INT},1e308\n1,1e-300\n".encode(), [kind]
    if kind == "truncate":
        return good[: rng.randrange(len(good))], [kind]
    if kind == "dups":
        return b"workers,throughput\n1,9\n1,10\n1,11\n", [kind]
    if kind == "one":
        return b"workers,throughput\n1,9.27\n", [kind]
    if kind == "zero":
        return b"workers,throughput\n1,0\n2,0\n", [kind]
    if kind == "extra_cols":
        return b"workers,throughput,x\n1,9,3\n2,13\n", [kind]
    if kind == "bom":
        return b"\xef\xbb\xbf" + good, [kind]
    return b"workers,throughput\n\n1,9\n\n\n2,13\n", [kind]


def graph_text(rng: random.Random) -> tuple[bytes, list[str]]:
    good = GRAPH.read_text()
    kind = rng.choice(["good", "truncate", "nan", "neg", "nonutf8", "empty", "garbage",
                       "huge"])
    if kind == "good":
        return good.encode(), [kind]
    if kind == "truncate":
        cut = rng.randrange(len(good))
        return good[:cut].encode(), [f"truncate at {cut}"]
    if kind == "nan":
        v = rng.choice(["nan", "inf", "-inf"])
        return good.replace("forward_compute_time=4.423", f"forward_compute_time={v}", 1).encode(), [
            f"forward time {v}"]
    if kind == "neg":
        return good.replace("parameter_size=3539968.000", "parameter_size=-3539968.000", 1).encode(), [
            kind]
    if kind == "nonutf8":
        return good.encode()[:500] + b"\xff\xfe" + good.encode()[500:], [kind]
    if kind == "empty":
        return b"", [kind]
    if kind == "huge":
        return good.replace("parameter_size=3539968.000", "parameter_size=1e308", 1).encode(), [
            kind]
    return b"node1 -- x -- y\n\t\x00\n-- --\nnode1 -- node1\n", [kind]


def hardware_text(rng: random.Random) -> tuple[bytes, list[str]]:
    base = json.loads(HARDWARE.read_text())
    kind = rng.choice(["good", "mutate", "mutate", "truncate", "profile", "huge"])
    if kind == "good":
        return json.dumps(base).encode(), [kind]
    if kind == "mutate":
        tree, log = mutate_json(rng, base, rng.randint(1, 3))
        return json.dumps(tree).encode(), ["hardware mutate"] + log
    if kind == "truncate":
        text = json.dumps(base)
        return text[: rng.randrange(len(text))].encode(), ["hardware truncate"]
    if kind == "profile":
        return ALEXNET.read_bytes(), ["a profile as hardware file"]
    key = rng.choice(["bandwidth_bps", "latency_s", "overhead_alpha_s_per_byte",
                      "overhead_beta_s", "fcfs_weight", "share_cv", "two_way_penalty",
                      "ring_latency_s"])
    base[key] = rng.choice([1e308, 1e-300, 0, -1, 10 ** 30])
    return json.dumps(base).encode(), [f"hardware {key}={base[key]}"]


