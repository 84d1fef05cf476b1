"""The report's inputs block: every option that changed the prediction is named there with its
value, and a value the prediction took by default is marked as such.

Expected values are derived from the options given (parsed and formatted as the block does)
and from the keyword defaults (``parse/keywords.py``), never written out.
"""
from __future__ import annotations

import inspect
import re
from html import unescape
from pathlib import Path

import pytest

from sgdsim.cli import main
from sgdsim.hardware import load_hardware
from sgdsim.parse.keywords import CLUSTER_KEYWORDS, KEYWORDS, specs as keyword_specs
from sgdsim.predict import parse_workers, predict
from sgdsim.report import ReportInput, Series, render_html
from sgdsim.report.inputs import DEFAULT, FROM_FILE, Specs, bandwidth, input_rows, worker_counts
from sgdsim.spec import ARCHITECTURES, COLLECTIVES, MODES, SHARINGS
from sgdsim.units import parse_bandwidth_Bps

ROOT = Path(__file__).resolve().parent.parent
PROFILE = str(ROOT / "examples" / "profiles" / "alexnet-nooverlap.json")
HARDWARE = str(ROOT / "examples" / "grids" / "hardware-lab-1gbps.json")
QUICK = ["--steps", "2", "--warmup", "1", "--replications", "2"]  # the simulator, briefly
BANDWIDTH = "bandwidth (each node's NIC)"


def inputs_block(html: str) -> dict[str, str]:
    """The block's rows, by input; it must come before the first figure."""
    start = html.index('<h2 id="inputs">')
    assert start < html.index("<figure>")
    block = html[start:html.index("</table>", start)]
    return {unescape(k): unescape(v) for k, v in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", block)}


def run_report(tmp_path, *options: str) -> dict[str, str]:
    out = tmp_path / "r.html"
    assert main(["report", PROFILE, *options, "--quiet", "-o", str(out)]) == 0
    return inputs_block(out.read_text())


def test_all_reduce_on_a_slower_network(tmp_path):
    allreduce = next(n for n, a in ARCHITECTURES.items() if "collective" in a.options)
    rows = run_report(tmp_path, "--workers", "1,2", "--bandwidth", "1Gbps", "--arch", allreduce,
                      "--mode", MODES[1], *QUICK)
    assert rows[BANDWIDTH] == bandwidth(parse_bandwidth_Bps("1Gbps"))  # given: no mark
    assert rows["architecture"].startswith(f"{allreduce}: ") and DEFAULT not in rows["architecture"]
    assert rows["mode"] == MODES[1]
    assert rows["workers"] == worker_counts([1, 2])
    # Not given, so marked: the all-reduce's own inputs and the interval's level.
    assert rows["collective"] == COLLECTIVES.names[0] + DEFAULT
    assert rows["gradient buckets"].endswith(DEFAULT)
    assert rows["interval level"].endswith(DEFAULT)
    assert rows["models"] == "fine" + DEFAULT
    # A parameter server's inputs do not apply, and are not listed.
    assert "link sharing" not in rows and "parameter servers" not in rows


def test_parameter_servers_with_their_sharing_and_count(tmp_path):
    ps = next(n for n, a in ARCHITECTURES.items() if a.servers)
    sharing = next(n for n, s in SHARINGS.items() if s.simulated and n != ARCHITECTURES[ps].default_sharing(MODES[1]))
    rows = run_report(tmp_path, "--workers", "2,4", "--arch", ps, "--mode", MODES[1], "--sharing", sharing,
                      "--ps-count", "2", "--model", "all", "--interval-level", "90%", *QUICK)
    assert rows["link sharing"] == sharing and rows["parameter servers"] == "2"
    assert rows["mode"] == MODES[1]
    assert rows["interval level"].startswith("90 %") and DEFAULT not in rows["interval level"]
    assert rows["models"].endswith("(--model all)")
    # Nothing said about the network: the default, marked.
    assert rows[BANDWIDTH] == bandwidth(parse_bandwidth_Bps(CLUSTER_KEYWORDS["bandwidth"])) + DEFAULT
    assert rows["hardware file"].endswith(DEFAULT)


def test_defaults_everywhere_are_marked(tmp_path):
    # An analytic model: the default sweep of worker counts costs nothing.
    rows = run_report(tmp_path, "--model", "lin")
    default_workers = inspect.signature(predict).parameters["workers"].default
    assert rows["workers"] == worker_counts(parse_workers(default_workers)) + DEFAULT
    assert rows[BANDWIDTH] == bandwidth(parse_bandwidth_Bps(KEYWORDS["bandwidth"])) + DEFAULT
    for name in ("architecture", "mode", "link sharing", "parameter servers", "interval level"):
        assert rows[name].endswith(DEFAULT), name
    assert rows["model's error in each interval"] == "none"  # the baselines have none
    assert "simulator" not in rows  # it did not run


def test_a_hardware_file_is_named_and_what_it_set_says_so(tmp_path):
    rows = run_report(tmp_path, "--workers", "1,2", "--hardware", HARDWARE, "--mode", MODES[1],
                      "--flow-cap", "5Gbps", *QUICK)
    arch = ARCHITECTURES.names[0]
    expected = bandwidth(parse_bandwidth_Bps(load_hardware(HARDWARE).bandwidth_for(arch)))
    assert rows[BANDWIDTH] == expected + FROM_FILE
    assert rows["hardware file"] == HARDWARE
    # What was given is not the file's, though the file was read with it.
    assert rows["mode"] == MODES[1]
    (cap,) = [v for k, v in rows.items() if "flow cap" in k]
    assert cap == bandwidth(parse_bandwidth_Bps("5Gbps"))


def test_a_hardware_file_alone_sets_the_network(tmp_path):
    """No other option: the report once failed here (the file was read as if flows were capped)."""
    rows = run_report(tmp_path, "--workers", "1,2", "--hardware", HARDWARE, *QUICK)
    arch = ARCHITECTURES.names[0]
    expected = bandwidth(parse_bandwidth_Bps(load_hardware(HARDWARE).bandwidth_for(arch)))
    assert rows[BANDWIDTH] == expected + FROM_FILE
    assert rows["hardware file"] == HARDWARE


def test_predict_report_has_the_block_too(tmp_path):
    out = tmp_path / "r.html"
    assert main(["predict", PROFILE, "--workers", "1,2", "--model", "lin", "--quiet",
                 "--report", str(out)]) == 0
    rows = inputs_block(out.read_text())
    assert rows[BANDWIDTH] == bandwidth(parse_bandwidth_Bps(KEYWORDS["bandwidth"])) + DEFAULT


def _rows(**keywords) -> dict[str, str]:
    series = (Series("toy · fine", "toy", "fine", ({"workers": 1, "throughput": 1.0},)),)
    return dict(input_rows(Specs.of(*keyword_specs(**keywords)), series, ({"name": "toy"},), "fine"))


@pytest.mark.parametrize("keywords", [
    {"flow_cap": "5Gbps"}, {"seed": 7}, {"jitter": 0.1}, {"two_way_penalty": 0.2},
    {"overhead_alpha": 1e-9}, {"overhead_beta": "1ms"}, {"share_cv": 0.3}, {"fcfs_weight": 0.8},
    {"window": "1MB", "streams": "http2"}, {"host_cores": 4, "mode": MODES[1]}, {"server_cpu": 2e-9},
])
def test_any_input_the_specs_hold_shows_up(keywords):
    """Whatever a spec holds that is not its default changes the block, so an input added to
    the specs later is listed without anyone remembering to list it."""
    def parts(rows):  # a row may list several inputs, "; " apart
        return {(k, part) for k, v in rows.items() for part in v.split("; ")}

    changed = parts(_rows(**keywords)) - parts(_rows())
    # ... and what changed is not passed off as a default.
    assert any(not part.endswith(DEFAULT) for _, part in changed), (keywords, changed)


def test_the_block_is_escaped_and_first():
    evil = "<b>x</b>"
    series = (Series("t · fine", "t", "fine", ({"workers": 1, "throughput": 1.0},)),)
    html = render_html(ReportInput("t", series, (), inputs=((evil, evil),)))
    assert evil not in html and inputs_block(html) == {evil: evil}


def _slower_copy(tmp_path) -> str:
    """The same DAG as PROFILE, every duration doubled: a second worker class."""
    from dataclasses import replace as _replace

    from sgdsim.profile.io import load_profile, save_profile

    prof = load_profile(PROFILE)
    path = str(tmp_path / "slow.json")
    save_profile(_replace(prof, durations_s=prof.durations_s * 2), path)
    return path


def load_profile_batch(path: str) -> int:
    from sgdsim.profile.io import load_profile

    return load_profile(path).job.batch_size


def test_a_heterogeneous_job_is_reported_with_a_row_per_class(tmp_path, capsys):
    """predict --report ended in 'profile coarse: cannot read file' after the prediction; report
    refused a job given only as --worker-profile classes."""
    slow = _slower_copy(tmp_path)
    classes = ["--worker-profile", f"fast={PROFILE}:2", "--worker-profile", f"slow={slow}:1"]
    for command in (["predict", *classes, "--report"], ["report", *classes, "-o"]):
        out = tmp_path / f"{command[0]}.html"
        assert main([*command, str(out), "--model", "coarse", "--quiet"]) == 0, capsys.readouterr().err
        rows = inputs_block(out.read_text())
        batch = load_profile_batch(PROFILE)
        assert rows["profiles"] == f"fast ×2 ({PROFILE}, batch {batch}); slow ×1 ({slow}, batch {batch})"
        assert rows["workers"] == "3"
        assert "fast ×2 + slow ×1 · coarse" in out.read_text()
    assert main(["report", PROFILE, *classes, "-o", str(tmp_path / "x.html")]) == 2
    assert "one of them" in capsys.readouterr().err and not (tmp_path / "x.html").exists()
