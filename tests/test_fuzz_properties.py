"""Hypothesis over every subcommand and every file format the CLI reads, in process: broken
profiles (mutations of examples/profiles/alexnet.json); curated option values of predict,
plan, optimize and calibrate-threshold; odd values (text, Unicode digits, 400-digit integers,
with and without units) for every option of every command; mutated hardware files, optimize
constants, coarse profiles, Kineto traces, ops CSVs, layer CSVs, PipeDream graphs and
validate grids. Every call keeps the contract of ``fuzzkit``. Valid runs are tiny (2 workers,
2 steps, 1 replication, ``--jobs 1``, the coarse model); commands that need root, a network or
PyTorch get only inputs that argparse refuses. About 10,000 inputs, derandomized (the same on
every run); tools/fuzz_cli.py explores new ones. Regressions: test_fuzz_regressions.py."""
from __future__ import annotations

import contextlib
import copy
import gzip
import itertools
import json
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from fuzz_strategies import (CALIBRATE_THRESHOLD, COARSE, CONSTANTS, HARDWARE, KINETO,
                             KINETO_PATH, MUTATION, OPS_ROW, OPTIMIZE, PLAN, PREDICT, QUANTITIES,
                             apply_mutation, graph_text, grid_toml, layers_csv, mutated_json,
                             ops_csv, ops_csv_text, options, subcommands, value_options)
from fuzzkit import (BASE, BIG_INT, EXAMPLES, FUZZ, GRAPH, MEASURED, PROFILE, TINY,
                     check_contract, contract)
from sgdsim.cli import build_parser

# ----------------------------------------------------------------------------- broken profiles

@st.composite
def broken_profiles(draw):
    """(file name, bytes) of a mutated alexnet profile: values, structure, text, encoding."""
    tree = copy.deepcopy(BASE)
    for mutation in draw(st.lists(MUTATION, min_size=0, max_size=4)):
        apply_mutation(tree, mutation)
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


# ----------------------------------------------------------------------------- every subcommand
# Every command path of the parser, fuzzed in process: the cheap ones run from a valid head
# with one to three of their options given odd values (text, Unicode digits, 400-digit
# integers, with units); those that need root, a network or PyTorch (lab, netbench, validate,
# profile, ops measure) get inputs argparse refuses, checked before anything could run.

# fewer phases than FUZZ's default: ``target`` and ``explain`` cost ~1 ms an example here
QUICK = settings(FUZZ, phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
PATHS = subcommands(build_parser())
C = "size=10MB,fwd=10ms,bwd=20ms,batch=32"
HW = str(EXAMPLES.parent / "grids" / "hardware-lab-100mbps.json")
OUT = itertools.count()
SAFE = {  # command path -> a cheap valid run; {n}: a fresh name in the scratch folder
    ("predict",): ["predict", PROFILE, "--model", "coarse", "--workers", "1,2"],
    ("report",): ["report", PROFILE, "--model", "coarse", "--workers", "1,2", "-o", "r{n}.html"],
    ("import", "pipedream"): ["import", "pipedream", GRAPH, "--batch-size", "8", "-o", "g{n}.json"],
    ("info",): ["info", PROFILE],
    ("optimize",): ["optimize", "alexnet", "--machines", "2", "--cores", "1"],
    ("ops", "list"): ["ops", "list", "--db", "{db}"],
    ("ops", "stats"): ["ops", "stats", "--db", "{db}"],
    ("ops", "export"): ["ops", "export", "e{n}.csv", "--db", "{db}"],
    ("ops", "import"): ["ops", "import", "{csv}", "--db", "i{n}.sqlite"],
    ("ops", "train"): ["ops", "train", "--db", "{db}", "--budget", "1"],
    ("ops", "eval"): ["ops", "eval", "--db", "{db}", "--budget", "1"],
}
SLOW = {  # as SAFE, but a valid run takes 30-300 ms: fewer examples
    ("import", "kineto"): ["import", "kineto", str(KINETO_PATH), "--batch-size", "8", "-o",
                           "k{n}.json"],
    ("calibrate-threshold",): ["calibrate-threshold", str(MEASURED), PROFILE],
    ("calibrate",): ["calibrate", PROFILE, "--hardware", HW, "--step-time", "1.72s", "-o",
                     "c{n}.json"],
    ("plan",): ["plan", "--coarse", C, "--dataset-size", "1000", "--workers", "1-2",
                "--finalists", "1", "--jobs", "1"],
}
GUARDED = [p for p in PATHS if p not in SAFE and p not in SLOW]
# options whose valid values cost seconds (process pools, a 64-machine search, training time,
# plan's simulated finalists)
COSTLY = {"--jobs", "--scheduler", "--budget", "--machines", "--cores"}
COSTLY_IN = {("plan",): {"--workers", "--finalists", "--max-ps"}}
# examples per command path: the cheap ones most (a valid ops run opens a database: ~20 ms)
WEIGHTS = {("info",): 8, ("optimize",): 6, ("predict",): 6, ("import", "pipedream"): 5,
           ("report",): 3}


@pytest.fixture(scope="module", autouse=True)
def sandbox(tmp_path_factory):
    """One parser for the module (building one costs ~30 ms, parsing with it well under 1 ms:
    the 10,000 inputs fit in time only so), a scratch working folder (fuzzed output names land
    there) and a scratch operator database (the default one is the user's)."""
    import sgdsim.cli as cli

    parser, d = cli.build_parser(), tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "build_parser", lambda command=None: parser)
        mp.chdir(d)
        mp.setenv("SGDSIM_OPS_DB", str(d / "default.sqlite"))
        (d / "ops.csv").write_bytes(ops_csv_text([OPS_ROW]))
        assert cli.main(["ops", "import", str(d / "ops.csv"), "--db", str(d / "ops.sqlite"),
                         "-q"]) == 0
        yield SimpleNamespace(parser=parser, dir=d)


@contextlib.contextmanager
def fresh_folder():
    """Each input in a folder of its own: a file one input wrote is no other input's."""
    old = os.getcwd()
    os.mkdir(folder := f"in{next(OUT)}")
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def _fuzz_options(capsys, sandbox, path, data):
    costly = COSTLY | COSTLY_IN.get(path, set())
    opts = [o for o in value_options(sandbox.parser, path) if o not in costly]
    d = sandbox.dir
    head = [a.format(n=next(OUT), db=d / "ops.sqlite", csv=d / "ops.csv")
            for a in {**SAFE, **SLOW}[path]]
    with fresh_folder():
        if not opts:  # info: its one argument, a path
            contract(capsys, [*path, data.draw(QUANTITIES)])
            return
        pairs = data.draw(st.lists(st.tuples(st.sampled_from(opts), QUANTITIES), min_size=1,
                                   max_size=3))
        rc, _, _ = contract(capsys, head + [x for p in pairs for x in p] + ["-q"])
    event(f"{' '.join(path)}: exit {rc}")  # --hypothesis-show-statistics: how many ran


@settings(QUICK, max_examples=4000)
@given(path=st.sampled_from([p for p in SAFE for _ in range(WEIGHTS.get(p, 1))]),
       data=st.data())
def test_option_values_of_every_command(capsys, sandbox, path, data):
    _fuzz_options(capsys, sandbox, path, data)


@settings(QUICK, max_examples=200)
@given(path=st.sampled_from(list(SLOW)), data=st.data())
def test_option_values_of_the_slower_commands(capsys, sandbox, path, data):
    _fuzz_options(capsys, sandbox, path, data)


@settings(QUICK, max_examples=3600)
@given(path=st.sampled_from(GUARDED), data=st.data())
def test_commands_that_need_root_or_a_network_refuse_at_parse_time(capsys, sandbox, path,
                                                                    data):
    opts = value_options(sandbox.parser, path) or ["--quiet"]
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(opts), QUANTITIES), max_size=3))
    # right after the command: a REMAINDER argument (lab exec COMMAND ...) swallows the rest
    argv = [*path, "--fuzz-no-such-option", *[x for p in pairs for x in p]]
    capsys.readouterr()
    try:  # the parser alone, as main() would run it first: the command itself never runs
        sandbox.parser.parse_args(argv)
    except SystemExit as e:
        rc = e.code
    else:
        pytest.fail(f"argparse accepted {argv}: it would run")
    check_contract(rc, *capsys.readouterr(), argv)


def test_the_fuzzed_commands_are_every_command():
    assert set(SAFE) | set(SLOW) | set(GUARDED) == set(PATHS)
    assert {("lab", "up"), ("lab", "exec"), ("netbench",), ("validate",), ("profile",),
            ("ops", "measure")} <= set(GUARDED)
    assert len(PATHS) >= 20


# ----------------------------------------------------------------------------- every file format

def _with_file(capsys, name: str, data: bytes, *argvs):
    with fresh_folder():
        Path(name).write_bytes(data)
        for argv in argvs:
            contract(capsys, [a if a != "FILE" else name for a in argv])


# two_way_table & co: see test_fuzz_regressions.py, OPEN
@settings(QUICK, max_examples=250)
@given(mutated_json(HARDWARE, no_huge=("two_way_table", "two_way_busy", "two_way_busy_push")),
       st.booleans())
def test_hardware_files(capsys, sandbox, data, predict):
    _with_file(capsys, "hw.json", data,
               ["predict", PROFILE, "--hardware", "FILE", "--model", "coarse", "--workers", "1,2"]
               if predict else
               ["optimize", "alexnet", "--machines", "2", "--cores", "1", "--hardware", "FILE"])


@settings(QUICK, max_examples=300)
@given(mutated_json(CONSTANTS))
def test_optimize_constants_files(capsys, sandbox, data):
    _with_file(capsys, "c.json", data,
               ["optimize", "alexnet", "--machines", "2", "--cores", "1", "--constants", "FILE"])


# messages=: see test_fuzz_regressions.py, OPEN
@settings(QUICK, max_examples=250)
@given(mutated_json(COARSE), st.lists(st.tuples(st.sampled_from(
    ["size", "fwd", "bwd", "batch", "update", "overlap", "name"]), QUANTITIES), max_size=2))
def test_coarse_profiles(capsys, sandbox, data, fields):
    spec = ",".join([C, *(f"{k}={v}" for k, v in fields)])
    _with_file(capsys, "coarse.json", data,
               ["predict", "FILE", "--model", "coarse", "--workers", "1,2"],
               ["predict", "--coarse", spec, "--model", "coarse", "--workers", "1,2"])


@settings(QUICK, max_examples=40)
@given(mutated_json(KINETO, max_mutations=2))
def test_kineto_traces(capsys, sandbox, data):
    _with_file(capsys, "trace.json", data,
               ["import", "kineto", "FILE", "--batch-size", "8", "-o", "out.json"])


@settings(QUICK, max_examples=200)
@given(ops_csv())
def test_ops_import_files(capsys, sandbox, data):
    _with_file(capsys, "ops.csv", data, ["ops", "import", "FILE", "--db", "ops.sqlite"])


@settings(QUICK, max_examples=100)
@given(ops_csv(steps=True))
def test_ops_import_step_files(capsys, sandbox, data):
    _with_file(capsys, "steps.csv", data, ["ops", "import", "FILE", "--db", "ops.sqlite"])


@settings(QUICK, max_examples=250)
@given(layers_csv())
def test_optimize_layer_files(capsys, sandbox, data):
    _with_file(capsys, "layers.csv", data,
               ["optimize", "FILE", "--machines", "2", "--cores", "1", "--batch-size", "8"])


@settings(QUICK, max_examples=300)
@given(graph_text(Path(GRAPH).read_text()))
def test_pipedream_graphs(capsys, sandbox, data):
    _with_file(capsys, "g.txt", data,
               ["import", "pipedream", "FILE", "--batch-size", "8", "-o", "out.json"])


@settings(QUICK, max_examples=400)
@given(grid_toml())
def test_grid_files(capsys, sandbox, data):
    # a valid grid is refused right after it is read (--measured with --dry-run): no lab, no
    # torch, nothing measured
    _with_file(capsys, "grid.toml", data,
               ["validate", "FILE", "--dry-run", "--measured", "none.csv", "-q"])
