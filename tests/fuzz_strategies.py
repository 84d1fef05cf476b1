"""Hypothesis strategies of the fuzz tests (``test_fuzz_properties.py``): option values that a
number/unit parser must refuse or bound, JSON mutations, and mutated copies of every file
format the CLI reads. Plain helpers, no tests here."""
from __future__ import annotations

import copy
import csv
import gzip
import io
import json

from hypothesis import strategies as st

from fuzzkit import BIG_INT, ROOT

# ----------------------------------------------------------------------------- option values

# Text a user can type: no control characters, no line or paragraph separators (an argument
# holding a newline makes a two-line message; reported, not this fuzzer's subject), no lone
# surrogates.
TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=12)
# '²', '①' pass str.isdigit(); '١٢' passes int() and float(): all must be refused as counts
UNICODE_DIGITS = st.text(st.characters(categories=("Nd", "No")), min_size=1, max_size=4)
HUGE_INTS = st.integers(300, 420).map(lambda k: str(10 ** k))  # float(int) overflows from 309
SPECIAL = st.sampled_from([
    "", " ", "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "-1e308", "1e309", "-1", "0",
    "-0", BIG_INT, "1e-300", "x", "1,2", "0x10", "1_0", "--", "½", "1e", ".", "²", "①",
    "١٢", "٣", "1-²", "²-3", "1e400", "9" * 401, "0." + "0" * 500 + "1", "+5", " 7 "])
NUMBERS = st.one_of(TEXT, UNICODE_DIGITS, HUGE_INTS, SPECIAL,
                    st.integers(-10 ** 20, 10 ** 20).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr))
UNITS = st.sampled_from(["", "s", "ms", "us", "µs", "min", "h", "d", "B", "KB", "MiB", "GB",
                         "bps", "Mbps", "Gbps", "Tbps", "GB/s", "%", "x"])
QUANTITIES = st.one_of(NUMBERS, st.tuples(NUMBERS, UNITS).map("".join))


def options(table: dict, max_size: int, values=None):
    """A few of the table's options (each with a value of its own list, or of ``values``)."""
    keys = sorted(table)
    pick = (lambda opt: st.sampled_from(table[opt])) if values is None else (lambda opt: values)
    pair = st.sampled_from(keys).flatmap(lambda opt: st.tuples(st.just(opt), pick(opt)))
    return st.lists(pair, max_size=max_size, unique_by=lambda p: p[0]).map(
        lambda pairs: [x for p in pairs for x in p])


# ----------------------------------------------------------------------------- option tables
# curated values per option of predict, plan, optimize, calibrate-threshold

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


# ----------------------------------------------------------------------------- JSON mutations

_BAD = [float("nan"), float("inf"), float("-inf"), -1, -1e-9, 0, 1e308, 10 ** 30, 2 ** 63,
        "x", "", "1", None, True, [], [[[]]], {}, {"a": 1}, [1, 2], 0.5, 1e-300, 1000,
        "fwd:node2", ["fwd:node2", "fwd:node2"]]
# 400-digit integers (float() overflows) and Unicode digits, for the files that refuse them
_HUGE = [10 ** 400, -10 ** 400, [10 ** 400], 10 ** 309, "²", "١٢"]
BAD_VALUES = st.sampled_from(_BAD)
BAD_OR_HUGE = st.sampled_from(_BAD + _HUGE)
EXTREME = st.sampled_from([0, -1, 1e-300, 1e-12, 1e12, 1e300, 1e308])


def mutations(values):
    return st.one_of(
        st.tuples(st.just("drop"), st.integers(0, 10 ** 6)),
        st.tuples(st.just("replace"), st.integers(0, 10 ** 6), values),
        st.tuples(st.just("scale"), st.integers(0, 10 ** 6), EXTREME),  # numbers only
        st.tuples(st.just("dup"), st.integers(0, 10 ** 6)),  # a list item twice
    )


MUTATION = mutations(BAD_VALUES)


def _paths(obj, prefix=()):
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def apply_mutation(tree, mutation):
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
        try:
            parent[path[-1]] = value * mutation[2]
        except OverflowError:  # a 400-digit integer times 1e300: left as it is
            pass
    else:
        parent.insert(path[-1], copy.deepcopy(value))


def _small(value):
    """``value`` with every integer of more than 300 digits made 1e300."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 300:
        return 1e300
    if isinstance(value, list):
        return [_small(v) for v in value]
    return {k: _small(v) for k, v in value.items()} if isinstance(value, dict) else value


@st.composite
def mutated_json(draw, base, max_mutations: int = 3, no_huge=()) -> bytes:
    """``base`` with a few mutations, as JSON text; now and then cut short or nested deep.
    Under the keys ``no_huge``, 400-digit integers are kept out (an open finding there)."""
    tree = copy.deepcopy(base)
    for mutation in draw(st.lists(mutations(BAD_OR_HUGE), max_size=max_mutations)):
        apply_mutation(tree, mutation)
    for key in no_huge:
        if isinstance(tree, dict) and key in tree:
            tree[key] = _small(tree[key])
    text = json.dumps(tree)
    form = draw(st.sampled_from(["json"] * 6 + ["truncated", "deep", "top-level"]))
    if form == "truncated":
        text = text[:draw(st.integers(0, len(text)))]
    elif form == "deep":
        text = "[" * 20000 + "]" * 20000
    elif form == "top-level":
        text = draw(st.sampled_from(["[]", "null", "1", '"x"', "NaN", "{}", "", "1" * 5000]))
    return text.encode()


# ----------------------------------------------------------------------------- file formats

HARDWARE = json.loads((ROOT / "examples" / "grids" / "hardware-lab-100mbps.json").read_text())
CONSTANTS = json.loads((ROOT / "src" / "sgdsim" / "data" / "kdd_constants.json").read_text())
KINETO_PATH = ROOT / "tests" / "data" / "kineto" / "mlp-modules.trace.json.gz"


def _first_step(trace: dict) -> dict:
    """The trace cut to its first ProfilerStep (a valid trace, 100 kB instead of 300)."""
    events = trace["traceEvents"]
    step = min((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")),
               key=lambda e: e["ts"])
    end = step["ts"] + step["dur"]
    kept = [e for e in events if e.get("ph") != "X" or e["ts"] <= end]
    for e in kept:
        for key in ("Input Strides", "Concrete Inputs", "Ev Idx", "External id"):
            e.get("args", {}).pop(key, None)
    return {**trace, "traceEvents": kept}


KINETO = _first_step(json.loads(gzip.decompress(KINETO_PATH.read_bytes())))
COARSE = {"format": "sgdsim-coarse", "size": "10MB", "fwd": "10ms", "bwd": "20ms", "batch": 32}
LAYERS_PATH = ROOT / "src" / "sgdsim" / "data" / "pipedream" / "alexnet.layers.csv"
GRID_PATH = ROOT / "examples" / "grids" / "lab-async.toml"
OPS_FIELDS = ("device_name", "device_kind", "device_framework", "device_driver", "op", "params",
              "dtype", "fwd_s", "bwd_s", "samples", "fwd_spread", "bwd_spread", "measured_at")
OPS_ROW = dict(zip(OPS_FIELDS, ["cpu-1t", "cpu", "pytorch", "", "mm", '{"k":4,"m":4,"n":4}',
                                "float32", "0.001", "0.002", "5", "0.1", "0.1", "0"]))
CELLS = st.one_of(NUMBERS, BAD_OR_HUGE.map(json.dumps), st.sampled_from([
    "[" * 20000 + "]" * 20000, '{"m":' + "[" * 20000 + "]" * 20000 + "}",
    '{"m":%d}' % 10 ** 400, '{"m":1e999}', '{"m":NaN}', "{", '{"m":"x"}', "9" * 30]))


STEPS_FIELDS = OPS_FIELDS[:4] + ("model", "batch_size", "dtype", "step_s", "calls_s", "measured_at")
STEPS_ROW = dict(zip(STEPS_FIELDS, ["cpu-1t", "cpu", "pytorch", "", "zoo:mlp", "4", "float32",
                                    "0.012", "0.010", "0"]))


@st.composite
def ops_csv(draw, steps: bool = False) -> bytes:
    """An ``ops export`` CSV (``--steps``: of timed steps) of one to three rows, a few cells
    replaced, maybe cut short."""
    fields, row, key = (STEPS_FIELDS, STEPS_ROW, "model") if steps else (OPS_FIELDS, OPS_ROW, "op")
    names = ["zoo:mlp", "zoo:gpt2"] if steps else ["mm", "conv2d"]
    rows = [dict(row, **{key: name}) for name in draw(st.lists(st.sampled_from(names),
                                                               min_size=1, max_size=3))]
    for i, field, cell in draw(st.lists(st.tuples(st.integers(0, 2),
                                                  st.sampled_from(fields), CELLS),
                                        max_size=3)):
        rows[i % len(rows)][field] = cell
    data = ops_csv_text(rows, fields)
    return data[:draw(st.integers(0, len(data)))] if draw(st.integers(0, 9)) == 0 else data


def ops_csv_text(rows: list[dict], fields: tuple = OPS_FIELDS) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


@st.composite
def layers_csv(draw) -> bytes:
    """A PipeDream layers CSV (``optimize``'s model file) with a few cells replaced."""
    rows = list(csv.reader(io.StringIO(LAYERS_PATH.read_text())))
    for r, c, cell in draw(st.lists(st.tuples(st.integers(1, 10 ** 6), st.integers(0, 100),
                                              st.one_of(NUMBERS, st.sampled_from([
                                                  "Conv2d(3, %d, kernel_size=(3, 3))" % 10 ** 400,
                                                  "Conv2d(3, ١٢, kernel_size=(3, 3))",
                                                  "Linear(in_features=4, out_features=2)"]))),
                                    max_size=3)):
        row = rows[1 + r % (len(rows) - 1)]
        row[c % len(row)] = cell
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and abs(v) == float("inf"):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(str(v))


GRID_KEYS = ["model", "batch_size", "bandwidth", "hardware", "workers", "duration", "warmup",
             "repeats", "calibrate", "arch", "mode", "overlap", "name", "ps_count", "sharing",
             "replications", "profile_steps", "predict_bandwidth", "nonsense"]


@st.composite
def grid_toml(draw) -> bytes:
    """A validate grid: defaults and one or two cases, a few keys set to odd values."""
    defaults = {"model": "lab:mlp-10mb", "batch_size": 16, "bandwidth": "100Mbps",
                "workers": "1,2", "duration": "70s", "warmup": "10s", "repeats": 1}
    cases = [{"name": f"c{i}", "arch": "ps", "mode": "async", "overlap": False}
             for i in range(draw(st.integers(1, 2)))]
    value = st.one_of(BAD_OR_HUGE, NUMBERS, st.sampled_from(["sync", "allreduce", "lab:", "1-4"]))
    for where, key, v in draw(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(GRID_KEYS),
                                                 value), max_size=3)):
        (defaults if where == 0 else cases[where % len(cases)])[key] = v
    lines = ["[defaults]"] + [f"{k} = {_toml_value(v)}" for k, v in defaults.items()
                              if v is not None]
    for case in cases:
        lines += ["[[case]]"] + [f"{k} = {_toml_value(v)}" for k, v in case.items()
                                 if v is not None]
    return "\n".join(lines).encode()


# ----------------------------------------------------------------------------- commands

def value_options(parser, path: tuple[str, ...]) -> list[str]:
    """The options of subcommand ``path`` (e.g. ("ops", "list")) that take one value."""
    for name in path:
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]
    return sorted(a.option_strings[-1] for a in parser._actions
                  if a.option_strings and a.nargs is None and a.const is None
                  and a.option_strings[-1] not in ("--help",))


def subcommands(parser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every runnable command path: ("predict",), ("import", "kineto"), ("lab", "up"), ..."""
    subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    if not subs:
        return [prefix]
    return [p for name, child in subs[0].choices.items()
            for p in subcommands(child, prefix + (name,))]


GRAPH_NUMBER = st.tuples(st.integers(0, 10 ** 6), st.one_of(NUMBERS, st.sampled_from(
    ["%d" % 10 ** 400, "1e999", "-1", "nan"])))


@st.composite
def graph_text(draw, text: str) -> bytes:
    """A PipeDream graph.txt with a few of its numbers replaced."""
    import re

    spans = [m.span() for m in re.finditer(r"[0-9]+(?:\.[0-9]+)?", text)]
    for index, value in sorted(draw(st.lists(GRAPH_NUMBER, max_size=3)), reverse=True):
        a, b = spans[index % len(spans)]
        text = text[:a] + value + text[b:]
        spans = [m.span() for m in re.finditer(r"[0-9]+(?:\.[0-9]+)?", text)]
    return text.encode()
