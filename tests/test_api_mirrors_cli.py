"""The Python API mirrors the CLI: ``sgdsim.predict(profile, **keywords)`` with an option's
value under its keyword's name (``--two-way-penalty 0.2`` is ``two_way_penalty="0.2"``,
``--hardware F`` is ``hardware=F``) answers what ``sgdsim predict`` prints, to the bit, or
refuses with the CLI's message. Random combinations of valid options (hypothesis), so a
default that one front sets and the other does not (a hardware file's dynamics dropped by the
API, a nominal network's overheads set by the CLI alone) shows up as a differing answer."""
import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sgdsim
from fuzz_strategies import options
from sgdsim.cli import main
from sgdsim.cli.tables import format_points
from sgdsim.errors import SgdsimError

LAB = ["examples/grids/hardware-lab-100mbps.json", "examples/grids/hardware-lab-200mbps.json"]
VALID = {  # a CLI option: values it accepts (the keyword is its name with underscores)
    "--bandwidth": ["1Gbps", "100Mbps"], "--mode": ["async", "sync"], "--arch": ["ps", "allreduce"],
    "--sharing": ["ps", "fcfs", "hybrid"], "--ps-count": ["2"], "--hardware": LAB,
    "--two-way-penalty": ["0.2"], "--share-cv": ["0.3"], "--join-boost": ["1.5"],
    "--fcfs-weight": ["0.3"], "--model-error": ["0.05"], "--interval-level": ["85%"],
    "--flow-cap": ["50Mbps"], "--host-cores": ["2"], "--ring-latency": ["1ms"], "--seed": ["3"],
    "--jitter": ["0.1"], "--model": ["fine", "coarse"], "--overhead-alpha": ["1e-9"],
    "--rho-threshold": ["0.8"], "--streams": ["http2"], "--window": ["28MB"], "--gpus-per-node": ["2"],
    "--intra-bandwidth": ["10GB/s"], "--bucket-size": ["5MB"], "--collective": ["hierarchical"],
}
PROFILE = "examples/profiles/alexnet.json"
COARSE = ["--coarse", "size=20MB,fwd=30ms,bwd=60ms,batch=32"]  # the coarse profile form
RUN = ["--workers", "2,3", "--replications", "1", "--steps", "10"]


def _cli(capsys, opts: list[str], source=(PROFILE,)) -> tuple[int, str, str]:
    code = main(["predict", *source, *RUN, "--quiet", "--format", "json", *opts])
    out, err = capsys.readouterr()
    return code, out, err


def _api(opts: list[str], source=(PROFILE,)):
    pairs = [*source, *RUN, *opts] if source[0].startswith("--") else [*RUN, *opts]
    kw = {pairs[i][2:].replace("-", "_"): pairs[i + 1] for i in range(0, len(pairs), 2)}
    return sgdsim.predict(None if source[0].startswith("--") else source[0], **kw)


def _same(text: str) -> list[dict]:
    return [{k: v for k, v in p.items() if k != "wall_s"} for p in json.loads(text)]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opts=options(VALID, max_size=4), source=st.sampled_from([(PROFILE,), tuple(COARSE)]))
def test_the_api_answers_what_the_cli_prints(capsys, opts, source):
    code, out, err = _cli(capsys, opts, source)
    try:
        points = _api(opts, source)
    except SgdsimError as exc:
        event("both refuse")
        assert code == 2 and str(exc) in err, (opts, str(exc), err)
        return
    event("both answer")
    assert code == 0, (opts, err)
    assert _same(format_points(points, "json")) == _same(out), opts


def test_the_plain_defaults_agree(capsys):
    """No option at all: the CLI's nominal 10 Gbit/s network is the API's default one."""
    code, out, _ = _cli(capsys, [])
    assert code == 0 and _same(format_points(_api([]), "json")) == _same(out)
