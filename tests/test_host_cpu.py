"""The hosts' CPU per byte (spec/host.py, docs/hosts.md): the transport's, host reductions',
a parameter server's; closed forms through the simulator and the coarse models."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgdsim
from sgdsim.errors import ConfigError
from sgdsim.analytic.coarse_profile import parse_coarse
from sgdsim.parse.keywords import specs
from sgdsim.predict import predict_with
from sgdsim.profile.host_cpu import SERVER_SUFFIX, with_host_cpu, with_server_ops
from sgdsim.profile.io import load_profile
from sgdsim.spec import Host, Job

PROFILES = Path(__file__).resolve().parent.parent / "examples" / "profiles"
M, FWD, BWD, BATCH = 100e6, 0.1, 0.2, 32
COARSE = f"size={M / 1e6:g}MB,fwd={FWD * 1e3:g}ms,bwd={BWD * 1e3:g}ms,batch={BATCH}"
FAST = dict(replications=1, steps=20, model_error=0)


def _coarse(model, workers, **kw):
    """The models' answers (``predict_with``: the simulator's settings and every cost for every
    case, each model taking what applies to it, as ``predict`` would refuse)."""
    return predict_with(parse_coarse(COARSE), {**FAST, **kw}, workers=workers, model=model)


def _step(model, workers=1, **kw):
    return _coarse(model, [workers], **kw)[0].step_time_s


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_one_worker_one_ps_is_the_hand_sum(model):
    """T_compute + 2M/B, the server's (server + tcp)·2M and the worker's tcp·2M."""
    B, tcp, server = 1e9 / 8, 1e-9, 2e-9
    expected = FWD + BWD + 2 * M / B + 2 * M * (server + tcp) + 2 * M * tcp
    got = _step(model, bandwidth="1Gbps", mode="sync", tcp_cpu=tcp, server_cpu=server)
    assert got == pytest.approx(expected, rel=1e-9)
    got = _step(model, bandwidth="1Gbps", mode="async", tcp_cpu=tcp, server_cpu=server)
    assert got == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_async_ps_saturates_at_the_servers_cpu(model):
    """Many workers, a fast link: the PS's CPU, one resource they all queue for, caps the
    throughput at batch / (2M·(server + tcp))."""
    tcp, server = 1e-9, 2e-9
    limit = BATCH / (2 * M * (server + tcp))
    pts = _coarse(model, [8, 16], bandwidth="100Gbps", mode="async", tcp_cpu=tcp, server_cpu=server)
    for p in pts:
        assert p.throughput == pytest.approx(limit, rel=0.03)
        assert p.throughput <= limit * 1.001


@pytest.mark.parametrize("model", ["fine", "coarse"])
@pytest.mark.parametrize("N", [2, 4, 8])
def test_ring_allreduce_is_eq11_plus_the_hosts_cpu(model, N):
    B, tcp, red = 10e9 / 8, 1e-9, 5e-10
    share = (N - 1) / N
    eq11 = FWD + BWD + 2 * share * M / B
    expected = eq11 + 2 * share * M * tcp + share * M * red
    got = _step(model, N, bandwidth="10Gbps", arch="allreduce", mode="sync", tcp_cpu=tcp,
                reduce_on="host", reduce_cpu=red)
    assert got == pytest.approx(expected, rel=1e-9)
    on_device = _step(model, N, bandwidth="10Gbps", arch="allreduce", mode="sync", tcp_cpu=tcp, reduce_cpu=red)
    assert on_device == pytest.approx(eq11 + 2 * share * M * tcp, rel=1e-9)


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_colocated_shards_pay_both_ends_per_byte_that_crosses_the_nic(model):
    W, B, tcp, server = 4, 10e9 / 8, 1e-9, 2e-9
    remote = (W - 1) / W
    expected = FWD + BWD + 2 * remote * M / B + 2 * remote * M * (tcp + server + tcp)
    got = _step(model, W, bandwidth="10Gbps", arch="colocated", mode="sync", tcp_cpu=tcp, server_cpu=server)
    assert got == pytest.approx(expected, rel=1e-9)


CASES = [dict(arch="ps", mode="async", bandwidth="1Gbps"), dict(arch="ps", mode="sync", bandwidth="1Gbps"),
         dict(arch="allreduce", mode="sync", bandwidth="10Gbps"),
         dict(arch="colocated", mode="sync", bandwidth="10Gbps")]


def _points(profile, model, workers, host=None, **kw):
    strategy, cluster, control = specs(**FAST, **kw)
    if host is not None:
        cluster = replace(cluster, host=host)
    pts = sgdsim.predict(Job.of(profile), strategy, cluster, control, workers=workers, model=model)
    return [(p.workers, p.throughput, p.step_time_s, p.ci_low, p.ci_high) for p in pts]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_rdma_is_tcp_without_its_cpu(case, model):
    profile = load_profile(PROFILES / "alexnet.json")
    rdma = _points(profile, model, [1, 4], transport="rdma", tcp_cpu=3e-9, server_cpu=1e-9, **case)
    free = _points(profile, model, [1, 4], transport="tcp", tcp_cpu=0.0, server_cpu=1e-9, **case)
    assert rdma == free


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_the_defaults_are_todays_answers(case, model):
    profile = load_profile(PROFILES / "resnet50.json")
    assert _points(profile, model, [1, 3], **case) == _points(profile, model, [1, 3], host=Host(), **case)


def test_server_ops_and_charges_land_where_the_bytes_are_handled():
    profile = load_profile(PROFILES / "alexnet-nooverlap.json")
    served = with_server_ops(profile)
    assert with_server_ops(served) is served
    pulls = [op for op in profile.ops if op.resource == "downlink"]
    assert served.n_ops == profile.n_ops + len(pulls)
    for op in pulls:
        assert served.ops[served.index()[op.id]].deps == (op.id + SERVER_SUFFIX,)
    charged = with_host_cpu(served, 1e-9, 3e-9)
    extra = (charged.durations_s - served.durations_s).sum(axis=1)
    total = sum(op.size_bytes for op in profile.ops if op.kind == "comm")
    assert extra == pytest.approx(total * (1e-9 + 3e-9), rel=1e-9)
    assert with_host_cpu(served, 0.0, 0.0) is served


@pytest.mark.parametrize("bad, message", [
    (dict(transport="udp"), "--transport"), (dict(reduce_on="cpu"), "--reduce-on"),
    (dict(tcp_cpu_s_per_byte=-1e-9), "--tcp-cpu"), (dict(reduce_cpu_s_per_byte=float("nan")), "--reduce-cpu"),
    (dict(server_cpu_s_per_byte=float("inf")), "--server-cpu")])
def test_bad_values_are_one_line_naming_the_option(bad, message):
    with pytest.raises(ConfigError, match=message) as err:
        Host(**bad)
    assert "\n" not in str(err.value)


COSTS = st.sampled_from(["tcp_cpu", "reduce_cpu", "server_cpu"])
PER_BYTE = st.sampled_from([0.0, 1e-10, 5e-10, 2e-9, 1e-8])


@pytest.mark.parametrize("model", ["fine", "coarse"])
@settings(max_examples=15, deadline=None, derandomize=True)
@given(case=st.sampled_from(CASES[1:] + [dict(arch="ps", mode="async", bandwidth="1Gbps")]),
       workers=st.sampled_from([1, 2, 4]), cost=COSTS, low=PER_BYTE, more=st.sampled_from([1e-10, 1e-9, 1e-8]),
       base=st.fixed_dictionaries({"tcp_cpu": PER_BYTE, "server_cpu": PER_BYTE}))
def test_throughput_never_rises_with_a_cost(model, case, workers, cost, low, more, base):
    """Raising any one cost per byte never raises the throughput (host reductions on)."""
    if model == "fine" and case["mode"] == "async" and workers > 1:
        workers = 1  # several async workers interleave: their order may shift either way
    kw = {**case, **base, "reduce_on": "host"}
    before = _coarse(model, [workers], **{**kw, cost: low})
    after = _coarse(model, [workers], **{**kw, cost: low + more})
    assert after[0].throughput <= before[0].throughput * (1 + 1e-12)


def test_the_hardware_file_carries_the_costs(tmp_path):
    from sgdsim.hardware import Hardware, load_hardware, save_hardware
    from sgdsim.parse.hardware import hardware_keywords

    hw = replace(Hardware.nominal(1e9), tcp_cpu_s_per_byte=2e-9, reduce_cpu_s_per_byte=3e-10,
                 server_cpu_s_per_byte=1e-9, transport="rdma", reduce_on="host")
    save_hardware(hw, tmp_path / "hw.json")
    back = load_hardware(str(tmp_path / "hw.json"))
    assert back == hw
    kw = hardware_keywords(back, {"arch": "allreduce", "tcp_cpu": 5e-9})
    assert (kw["tcp_cpu"], kw["reduce_cpu"], kw["transport"], kw["reduce_on"]) == (5e-9, 3e-10, "rdma", "host")
    assert "server_cpu" not in kw  # an all-reduce has no server: the file's value is left out
    ps = hardware_keywords(back, {"arch": "ps", "mode": "sync"})
    assert ps["server_cpu"] == 1e-9 and "reduce_on" not in ps and "reduce_cpu" not in ps
    data = {**hw.to_dict(), "transport": "udp"}
    (tmp_path / "bad.json").write_text(__import__("json").dumps(data))
    with pytest.raises(Exception, match="transport"):
        load_hardware(str(tmp_path / "bad.json"))


def test_cli_options_and_bad_values(tmp_path):
    import subprocess
    import sys

    base = [sys.executable, "-m", "sgdsim.cli", "predict", "--coarse", COARSE, "--model", "coarse", "--workers", "1",
            "--bandwidth", "1Gbps", "--format", "json"]
    ok = subprocess.run(base + ["--tcp-cpu", "1e-9", "--server-cpu", "2e-9"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    step = __import__("json").loads(ok.stdout)[0]["step_time_s"]
    assert step == pytest.approx(FWD + BWD + 2 * M / 125e6 + 2 * M * 3e-9 + 2 * M * 1e-9, rel=1e-9)
    for bad in (["--server-cpu", "-1"], ["--transport", "udp"], ["--reduce-cpu", "nan"],
                ["--reduce-cpu", "1e-9"], ["--arch", "allreduce", "--mode", "sync", "--server-cpu", "1e-9"]):
        r = subprocess.run(base + bad, capture_output=True, text=True)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_netbench_host_cpu_measures_into_the_file(tmp_path):
    from sgdsim.hardware import load_hardware
    from sgdsim.lab.hostcpu import measure_host_cpu

    m = measure_host_cpu(tcp_bytes=4 << 20, reduce_bytes=1 << 20, repeats=3)
    for key in ("tcp_cpu_s_per_byte", "reduce_cpu_s_per_byte"):
        assert 0 < m[key] < 1e-6
    import subprocess
    import sys

    out = tmp_path / "hw.json"
    r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "netbench", "--host-cpu", "--host-cpu-size", "4MB",
                        "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    hw = load_hardware(str(out))
    assert 0 < hw.tcp_cpu_s_per_byte < 1e-6 and 0 < hw.reduce_cpu_s_per_byte < 1e-6
