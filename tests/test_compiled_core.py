"""The simulator core compiled at install (``build_core.py``, ``sgdsim.compiled``): it is there
after an install, it gives the pure-Python path's answers to the bit, and a core edited since
its build is never run."""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import sgdsim
from conftest import layered_profile
from sgdsim import compiled
from sgdsim.profile.io import load_profile, save_profile
from sgdsim.sim import WorkerClass, simulate
from simcfg import simcfg

ROOT = Path(__file__).resolve().parents[1]


def _build_core():
    spec = importlib.util.spec_from_file_location("build_core", ROOT / "build_core.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_install_built_the_core():
    if os.environ.get("SGDSIM_PURE_PYTHON", "") not in ("", "0"):
        pytest.skip("SGDSIM_PURE_PYTHON is set: the pure-Python path is asked for")
    assert compiled.HAVE_COMPILED, f"the compiled core {compiled._WHY_PURE}: pip install -e . builds it"
    assert compiled.CORE.SOURCES_SHA256 == compiled.sources_sha256(
        os.path.dirname(compiled.__file__), compiled.CORE.SOURCES)
    assert compiled._regenerated_sha256() == compiled.CORE.CORE_SHA256  # generating is deterministic


def test_a_core_edited_since_its_build_is_not_run(monkeypatch, capsys):
    if not compiled.HAVE_COMPILED:
        pytest.skip("no compiled core here")
    monkeypatch.setattr(compiled, "sources_sha256", lambda *a: "edited")
    core, why = compiled._load()  # a file changed, but not what would be compiled (a comment)
    assert core is compiled.CORE and why == ""
    monkeypatch.setattr(compiled, "_regenerated_sha256", lambda: "another core")
    core, why = compiled._load()
    assert core is None and why == "is older than its sources"
    monkeypatch.setattr(compiled, "_WHY_PURE", why)
    monkeypatch.setattr(compiled, "_warned", False)
    compiled.warn_if_pure()
    compiled.warn_if_pure()
    err = capsys.readouterr().err
    assert err.count("older than its sources") == 1 and "pip install -e ." in err


_PURE_SCRIPT = textwrap.dedent("""
    import json, sys
    from sgdsim.profile.io import load_profile
    from sgdsim.sim import WorkerClass, simulate
    from sgdsim import compiled
    from sgdsim.analytic.mva import symmetric_curve, symmetric_sweep
    from simcfg import simcfg
    cases = json.loads(sys.argv[1])
    out = {"compiled": compiled.HAVE_COMPILED, "results": [],
           "mva": symmetric_curve([0.01, 0.02, 0.005], ["delay", "ps", "fcfs"], 40).tolist(),
           "sweep": [a.tolist() for a in symmetric_sweep([[0.01, 0.02, 0.005], [0.02, 0.0, 0.03]],
                                                         ["delay", "ps", "fcfs"], [7, 30])]}
    for case in cases:
        classes = [WorkerClass(n, load_profile(path), c) for n, path, c in case["classes"]]
        r = simulate(classes, simcfg(**case["config"]))
        out["results"].append({"throughput": r.throughput, "ci_low": r.ci_low,
                               "ci_high": r.ci_high, "ops": r.ops_simulated,
                               "utilization": {k: float(v) for k, v in r.utilization.items()},
                               "end_s": [float(x) for x in r.timeline.end_s]})
    print(json.dumps(out))
""")


def _profiles(tmp_path):
    fast = layered_profile([2e6, 0.0, 3e6, 1e6], [[0.01, 0.002, 0.02, 0.004], [0.012, 0.001, 0.03, 0.005]],
                           [[0.02, 0.003, 0.04, 0.008], [0.02, 0.002, 0.05, 0.006]],
                           upd=[0.001, 0.0, 0.002, 0.001], overlap=True, ps=[0, 0, 1, 1])
    slow = layered_profile([2e6, 0.0, 3e6, 1e6], [0.03, 0.004, 0.05, 0.01], [0.06, 0.006, 0.1, 0.02],
                           upd=[0.001, 0.0, 0.002, 0.001], overlap=True, ps=[0, 0, 1, 1])
    one = layered_profile([2e6, 0.0, 3e6, 1e6], [0.01, 0.002, 0.02, 0.004], [0.02, 0.003, 0.04, 0.008],
                          upd=[0.001, 0.0, 0.002, 0.001], overlap=True)
    paths = {}
    for name, prof in (("fast", fast), ("slow", slow), ("one", one)):
        paths[name] = str(tmp_path / f"{name}.json")
        save_profile(prof, paths[name])
    return paths


def test_pure_python_gives_the_compiled_answers_to_the_bit(tmp_path):
    """Every policy and mechanism of the core, run compiled here and as Python in a child."""
    if not compiled.HAVE_COMPILED:
        pytest.skip("no compiled core here: the in-process run is pure Python already")
    from sgdsim.analytic.mva import symmetric_curve, symmetric_sweep

    paths = _profiles(tmp_path)
    base = dict(bandwidth_bps=8e6, warmup_steps=2, steps_per_worker=4, timeline=True)
    tcp = dict(join_boost=(1.5, 1.3), join_after_s=(0.01, 0.01), join_delay_s=(0.005, 0.0), share_cv=0.3,
               stall_prob=(0.3, 0.2), stall_mean_s=(0.05, 0.05), stall_incumbent_prob=(0.2, 0.1),
               stall_incumbent_mean_s=(0.02, 0.02), two_way_penalty=0.2)
    cases = [
        {"classes": [["fast", paths["fast"], 3]],
         "config": {**base, "mode": "async", "sharing": "ps", "streams": "http2",
                    "window_bytes": 1.5e6, "seed": 3}},
        {"classes": [["fast", paths["fast"], 2], ["slow", paths["slow"], 2]],
         "config": {**base, "mode": "sync", "sharing": "fcfs", "flow_cap_bps": 5e6,
                    "order": "random", "seed": 5}},
        {"classes": [["fast", paths["fast"], 2]],
         "config": {**base, "mode": "async", "sharing": "ps", "ps_count": 3, "seed": 11}},
        {"classes": [["one", paths["one"], 4]],
         "config": {**base, "mode": "async", "sharing": "ps", "seed": 13, "host_contention": (0.1, 0.2), **tcp}},
        {"classes": [["slow", paths["slow"], 3]],
         "config": {**base, "arch": "allreduce", "mode": "sync", "seed": 17}},
        {"classes": [["fast", paths["fast"], 3]],  # shared cores: compute re-timed as others start and end
         "config": {**base, "mode": "sync", "sharing": "fcfs", "host_cores": 1, "seed": 19}},
    ]
    env = dict(os.environ, SGDSIM_PURE_PYTHON="1")
    src = str(Path(sgdsim.__file__).resolve().parents[1])
    tests = str(Path(__file__).resolve().parent)  # simcfg
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, tests, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", _PURE_SCRIPT, json.dumps(cases)], env=env,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    pure = json.loads(proc.stdout)
    assert pure["compiled"] is False
    assert pure["mva"] == symmetric_curve([0.01, 0.02, 0.005], ["delay", "ps", "fcfs"], 40).tolist()
    sweep = symmetric_sweep([[0.01, 0.02, 0.005], [0.02, 0.0, 0.03]], ["delay", "ps", "fcfs"], [7, 30])
    assert pure["sweep"] == [a.tolist() for a in sweep]
    for case, got in zip(cases, pure["results"]):
        classes = [WorkerClass(n, load_profile(p), c) for n, p, c in case["classes"]]
        r = simulate(classes, simcfg(**case["config"]))
        assert got["ops"] == r.ops_simulated
        assert got["throughput"] == r.throughput
        assert (got["ci_low"], got["ci_high"]) == (r.ci_low, r.ci_high)
        assert got["utilization"] == {k: float(v) for k, v in r.utilization.items()}
        assert got["end_s"] == r.timeline.end_s.tolist()


# ----------------------------------------------------------------------------- the generator

def _module(bc, source: str):
    return bc.Module("m", "sgdsim.sim.m", "sim/m.py", textwrap.dedent(source))


def test_the_generator_qualifies_calls_and_inlines_constants():
    bc = _build_core()
    m = _module(bc, """
        LIMIT, SCALE = 3, 0.5
        @core
        def helper(x: int) -> float:
            return x * SCALE
        @core_inline
        def main(n: int, t: float) -> tuple[int, float]:
            if n > LIMIT:
                return n, np.inf
            return n, helper(n) + t
    """)
    bc.read({"m": m})
    assert m.constants == {"LIMIT": 3, "SCALE": 0.5}
    text = bc.emit_function(m, m.functions["main"], {"m": m})
    assert text.startswith("cdef inline (int64_t, double) m__main(int64_t n, double t) noexcept nogil:")
    assert "m__helper(n)" in text and "n > 3" in text and "INFINITY" in text
    assert "cdef double m__helper(int64_t x) noexcept nogil:\n    return x * 0.5" in bc.emit_function(
        m, m.functions["helper"], {"m": m})


@pytest.mark.parametrize("source, message", [
    ("@core\ndef f(x) -> int:\n    return x\n", "needs every annotation"),
    ("@core\ndef f(x: str) -> int:\n    return 1\n", "no C type for annotation 'str'"),
    ("@core\ndef f(x: int) -> float:\n    return np.sqrt(x)\n", "np.sqrt in the core"),
])
def test_the_generator_refuses_what_it_cannot_compile(source, message):
    bc = _build_core()
    m = _module(bc, source)
    bc.read({"m": m})
    with pytest.raises(bc.BuildError, match=message):
        bc.emit_function(m, m.functions["f"], {"m": m})


def test_the_generated_module_covers_every_core_function():
    bc = _build_core()
    text = bc.generate()
    marked = 0
    for _, _, path in bc.MODULES:
        tree = ast.parse((ROOT / "src" / "sgdsim" / path).read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d) in bc.DECORATORS for d in node.decorator_list):
                marked += 1
                assert f"__{node.name}(" in text, node.name
    assert text.count(" noexcept nogil:") == marked + 1 > 60  # + the C truncation
    assert "cdef class State:" in text and "cdef double[::1] op_rem" in text
    # replications run on threads (replicate.py): the core must not hold the GIL while it runs
    assert "    with nogil:\n        out = engine__run(P, S, K, LK, Q, target_completions, max_ops)" in text


def test_a_typed_view_never_copies_an_array_the_core_writes():
    if not compiled.HAVE_COMPILED:
        pytest.skip("no compiled core here")
    from sgdsim.sim.heap import make_heaps

    H = make_heaps(2, 4, 8)
    compiled.CORE.Heaps(H)  # the right dtypes: views over the same memory
    with pytest.raises(TypeError, match="key: the compiled core needs a contiguous float64 array"):
        compiled.CORE.Heaps(H._replace(key=np.zeros(8, np.float32)))


def test_an_annotated_local_is_a_c_variable_and_needs_a_value():
    """``right: int = (a < b) | (c < d)``: Cython would infer a Python object for the sum of
    truth values (and refuse it without the GIL); the annotation makes it an int64_t."""
    bc = _build_core()
    m = _module(bc, """
        @core
        def f(a: float, b: float) -> int:
            right: int = (a < b) | (b < a)
            return 2 + right
    """)
    bc.read({"m": m})
    text = bc.emit_function(m, m.functions["f"], {"m": m})
    assert "    cdef int64_t right\n" in text and "    right = (a < b) | (b < a)\n" in text
    assert "right: int" not in text
    bare = _module(bc, "@core\ndef f(a: float) -> int:\n    right: int\n    return 1\n")
    bc.read({"m": bare})
    with pytest.raises(bc.BuildError, match="declared without a value"):
        bc.emit_function(bare, bare.functions["f"], {"m": bare})
