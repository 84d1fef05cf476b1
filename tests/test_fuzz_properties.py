"""Hypothesis over broken profiles (mutations of examples/profiles/alexnet.json) and over the
option values of predict, plan, optimize and calibrate-threshold: every call keeps the contract
of ``fuzzkit``. Valid simulations are tiny (2 workers, 2 steps, 1 replication, ``--jobs 1``)."""
from __future__ import annotations

import copy
import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fuzzkit import BASE, BIG_INT, EXAMPLES, FUZZ, MEASURED, PROFILE, TINY, contract

# ----------------------------------------------------------------------------- broken profiles

BAD_VALUES = st.sampled_from([
    float("nan"), float("inf"), float("-inf"), -1, -1e-9, 0, 1e308, 10 ** 30, 2 ** 63,
    "x", "", "1", None, True, [], [[[]]], {}, {"a": 1}, [1, 2], 0.5, 1e-300, 1000,
    "fwd:node2", ["fwd:node2", "fwd:node2"]])
EXTREME = st.sampled_from([0, -1, 1e-300, 1e-12, 1e12, 1e300, 1e308])

MUTATION = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("replace"), st.integers(0, 10 ** 6), BAD_VALUES),
    st.tuples(st.just("scale"), st.integers(0, 10 ** 6), EXTREME),  # numbers only
    st.tuples(st.just("dup"), st.integers(0, 10 ** 6)),  # a list item twice
)


def _paths(obj, prefix=()):
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _apply(tree, mutation):
    what, index = mutation[0], mutation[1]
    paths = [(p, v) for p, v in _paths(tree) if p]
    if what == "scale":
        paths = [(p, v) for p, v in paths
                 if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if what == "dup":
        paths = [(p, v) for p, v in paths if isinstance(p[-1], int)]
    if not paths:
        return
    path, value = paths[index % len(paths)]
    parent = tree
    for k in path[:-1]:
        parent = parent[k]
    if what == "drop":
        del parent[path[-1]]
    elif what == "replace":
        parent[path[-1]] = copy.deepcopy(mutation[2])
    elif what == "scale":
        parent[path[-1]] = value * mutation[2]
    else:
        parent.insert(path[-1], copy.deepcopy(value))


@st.composite
def broken_profiles(draw):
    """(file name, bytes) of a mutated alexnet profile: values, structure, text, encoding."""
    tree = copy.deepcopy(BASE)
    for mutation in draw(st.lists(MUTATION, min_size=0, max_size=4)):
        _apply(tree, mutation)
    text = json.dumps(tree)
    form = draw(st.sampled_from(["json", "json", "json", "truncated", "non-utf8", "gzip",
                                 "truncated-gzip", "top-level", "huge-literal"]))
    if form == "truncated":
        text = text[:draw(st.integers(0, len(text) - 1))]
    elif form == "top-level":
        text = draw(st.sampled_from(["[]", "null", "1", '"x"', "NaN", "{}", "true", ""]))
    elif form == "huge-literal":
        lit = draw(st.sampled_from(["1e999", "-1e999", "Infinity", "NaN", "1e-999"]))
        text = text.replace('"size_bytes": 3539968.0', f'"size_bytes": {lit}', 1)
    data = text.encode()
    name = "p.json"
    if form == "non-utf8":
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + b"\xff\xfe\x80" + data[cut:]
    elif form in ("gzip", "truncated-gzip"):
        name = "p.json.gz"
        data = gzip.compress(data)
        if form == "truncated-gzip":
            data = data[:draw(st.integers(2, len(data) - 1))]
    return name, data


@settings(FUZZ, max_examples=80)
@given(broken_profiles())
def test_broken_profiles_keep_the_contract(capsys, profile):
    name, data = profile
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        contract(capsys, ["info", path])
        contract(capsys, ["predict", path, "--model", "coarse", "--workers", "1-3", "-q"])
        contract(capsys, ["predict", path, "--workers", "1,2", *TINY, "-q"])


@settings(FUZZ, max_examples=15)
@given(broken_profiles(), st.sampled_from([
    ["--mode", "sync"], ["--mode", "sync", "--arch", "allreduce"], ["--ps-count", "2"],
    ["--model", "all", "--format", "json"], ["--model", "lin", "--format", "csv"]]))
def test_broken_profiles_in_other_configurations(capsys, profile, extra):
    name, data = profile
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        contract(capsys, ["predict", path, "--workers", "1,2", *TINY, "-q", *extra])


# ----------------------------------------------------------------------------- option values

NUMERIC_BAD = ["", " ", "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "-1e308", "-1", "0",
               BIG_INT, "1e-300", "x", "1,2", "0x10", "--", "1e"]
BW = ["10Gbps", "1Gbps", "100Mbps", "1e9bps", "10Gbs", "5XB", "", "-1Gbps", "0bps", "nan",
      "inf", "1e308", "1e308bps", "1e-300bps", "1kbps", "10", "Gbps", "nanGbps", "infbps",
      BIG_INT + "bps", "1Pbps", "2Pbps"]
DUR = ["0", "0s", "2ms", "0.2ms", "1us", "", "-1ms", "nan", "nans", "inf", "infs", "1e308s",
       "5XB", "1e-300s", BIG_INT + "s", "ms"]
SIZE = ["28MB", "1MB", "64KB", "", "0", "-1MB", "5XB", "nan", "nanMB", "inf", "1e308B",
        BIG_INT, "1B"]
WORKERS = ["1", "2", "1,2", "1-2", "2,1", "1,1", "0", "-1", "1-", "-", "", "x", BIG_INT,
           "1-99999999999999", "5000", "100000", "1025", "2-1", "1.5", "1,,2", "nan", "inf",
           "1e3", "0-2"]
SEEDS = ["0", "1", "9223372036854775807", "9223372036854775808", "-1",
         "18446744073709551616", "1.5", "", "x"]

PREDICT = {
    "--workers": WORKERS,
    "--bandwidth": BW,
    "--mode": ["async", "sync", "SYNC"],
    "--arch": ["ps", "allreduce", "ring"],
    "--model": ["fine", "coarse", "lin", "cynthia", "all", "Coarse"],
    "--sharing": ["ps", "fcfs", "hybrid", "threshold", "maxmin"],
    "--fcfs-weight": ["0", "0.3", "1", "1.5"] + NUMERIC_BAD,
    "--share-cv": ["0", "0.3", "9.99", "10"] + NUMERIC_BAD,
    "--two-way-penalty": ["0", "0.1", "1", "1.5"] + NUMERIC_BAD,
    "--ring-latency": DUR,
    "--rho-threshold": ["0.6", "1", "0.01", "2"] + NUMERIC_BAD,
    "--flow-cap": BW,
    "--streams": ["fifo", "http2", "http3"],
    "--window": SIZE,
    "--order": ["profiled", "tic", "reverse", "random", "sorted"],
    "--overhead-alpha": ["0", "1e-9", "0.001", "0.002"] + NUMERIC_BAD,
    "--overhead-beta": DUR,
    "--ps-count": ["1", "2", "3", "9", "1000"] + NUMERIC_BAD,
    "--seed": SEEDS,
    "--jitter": ["0", "0.1", "9.9", "10"] + NUMERIC_BAD,
    "--warmup": ["0", "1", "10001"] + NUMERIC_BAD,
    "--steps": ["1", "2", "100001", "0"] + NUMERIC_BAD,
    "--replications": ["1", "2", "1001"] + NUMERIC_BAD,
    "--jobs": ["1", "257"] + NUMERIC_BAD,
    "--backend": ["local", "mpi"],
    "--format": ["table", "csv", "json", "xml"],
}
PLAN = {
    "--dataset-size": ["1000", "1.28M", "10k", "1"] + NUMERIC_BAD,
    "--workers": ["1-4", "1,2", "2"] + [w for w in WORKERS if w not in ("5000", "1025")],
    "--bandwidth": BW,
    "--strategies": ["async-ps", "sync-ps", "allreduce", "async-ps,sync-ps,allreduce",
                     "allreduce,allreduce", "", "ring", ","],
    "--max-ps": ["1", "2", "9"] + NUMERIC_BAD,
    "--price-per-node-hour": ["1", "0.5", "0"] + NUMERIC_BAD,
    "--ps-price-per-node-hour": ["1", "0"] + NUMERIC_BAD,
    "--target-epoch-time": ["90s", "30min", "2h", "1ms"] + DUR,
    "--budget-per-epoch": ["1", "0.001", "100"] + NUMERIC_BAD,
    "--knee": ["5%", "1%", "100%", "0%", "5", "-5%", "nan%", "inf%", "", "%"],
    "--finalists": ["1", "0", "-1", BIG_INT, "x"],
    "--seed": SEEDS,
    "--format": ["table", "json", "csv"],
}
OPTIMIZE = {  # machines x cores stay small: the optimizer's search grows fast (see above)
    "--machines": ["1", "2", "4", "8", "16"] + NUMERIC_BAD,
    "--cores": ["1", "2", "4"] + NUMERIC_BAD,
    "--batch-size": ["1", "32", "256", "0", "-1", "nan", BIG_INT, ""],
    "--dataset-size": ["1", "1000", "1281167", "0", "-1", BIG_INT, "nan", "1e6"],
    "--read-every": ["1", "256", "0", "-1", BIG_INT, "nan"],
    "--bandwidth": BW,
    "--latency": DUR,
    "--max-layer-replicas": ["1", "4", "0", "-1", BIG_INT, "nan"],
    "--reads": ["worst", "best", "average"],
    "--seed": SEEDS,
    "--format": ["table", "json", "csv"],
}
CALIBRATE_THRESHOLD = {"--bandwidth": BW}


def options(table: dict[str, list[str]], max_size: int):
    """A few of the table's options, each with one of its values, in a random order."""
    pair = st.sampled_from(sorted(table)).flatmap(
        lambda opt: st.tuples(st.just(opt), st.sampled_from(table[opt])))
    return st.lists(pair, max_size=max_size, unique_by=lambda p: p[0]).map(
        lambda pairs: [x for p in pairs for x in p])


# once found "--steps 1" (with --replications 1): an interval [0.0, inf]; see FOUND
@settings(FUZZ, max_examples=150)
@given(options(PREDICT, 6), st.sampled_from(["profile", "profile", "coarse", "workers"]))
def test_predict_options_keep_the_contract(capsys, opts, source):
    if source == "profile":
        head = ["predict", PROFILE]
    elif source == "coarse":
        head = ["predict", "--coarse", "size=10MB,fwd=10ms,bwd=20ms,batch=32"]
    else:
        head = ["predict", "--worker-profile", f"a={PROFILE}:1", "--worker-profile",
                f"b={PROFILE}:1"]
    # tiny defaults first (a drawn value of the same option overrides them), and only for the
    # models that run the simulator: the others refuse --steps & co.
    models = [opts[i + 1] for i, a in enumerate(opts[:-1]) if a == "--model"]
    tiny = TINY if (models[-1] if models else "fine") in ("fine", "all") else ["--jobs", "1"]
    argv = head + (["--workers", "1,2"] if source != "workers" else []) + tiny + ["-q"] + opts
    contract(capsys, argv)


@settings(FUZZ, max_examples=30)
@given(options(PLAN, 4), st.booleans())
def test_plan_options_keep_the_contract(capsys, opts, coarse):
    head = (["plan", "--coarse", "size=10MB,fwd=10ms,bwd=20ms,batch=32"] if coarse
            else ["plan", PROFILE])
    argv = head + ["--dataset-size", "1000", "--workers", "1-3", "--finalists", "1", "--jobs",
                   "1", "-q"] + opts
    contract(capsys, argv)


@settings(FUZZ, max_examples=40)
@given(options(OPTIMIZE, 4), st.sampled_from(["alexnet", "vgg16", "nosuchmodel", "", "ALEXNET"]))
def test_optimize_options_keep_the_contract(capsys, opts, model):
    contract(capsys, ["optimize", model, "--machines", "2", "--cores", "1", "-q"] + opts)


CSV_BODIES = st.sampled_from([
    MEASURED.read_bytes(), b"", b"workers,throughput\n", b"w,t\n1,2\n",
    b"workers,throughput\n1,nan\n2,10\n", b"workers,throughput\n1,inf\n2,10\n",
    b"workers,throughput\n-1,5\n0,3\n", b"workers,throughput\n2,-4\n",
    b"workers,throughput\n1,0\n2,0\n", b"workers,throughput\n1,9\n1,10\n",
    b"workers,throughput\n" + BIG_INT.encode() + b",1e308\n",
    b"workers,throughput\n1,1e-300\n", b"workers,throughput,x\n1,9,3\n2,13\n",
    b"\xef\xbb\xbf" + MEASURED.read_bytes(), b"workers,throughput\n\n1,9\n\n2,13\n",
    b"workers,throughput\n1,\xff\xfe100\n", b"workers,throughput\n1.5,9\n",
    b"workers,throughput\n1,9;2,13\n", b'"workers","throughput"\n"1","9"\n'])


# once found the calibrate-threshold bug of FOUND (1e20 workers: OverflowError)
@settings(FUZZ, max_examples=30)
@given(CSV_BODIES, st.integers(0, 10 ** 6), options(CALIBRATE_THRESHOLD, 1),
       st.sampled_from(["alexnet.json", "resnet50-nooverlap.json", "missing.json"]))
def test_calibrate_threshold_keeps_the_contract(capsys, body, cut, opts, profile):
    if cut % 3 == 0:  # a third of the time: the CSV cut short
        body = body[:cut % (len(body) + 1)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.csv"
        path.write_bytes(body)
        contract(capsys, ["calibrate-threshold", path, EXAMPLES / profile, "-q"] + opts)
