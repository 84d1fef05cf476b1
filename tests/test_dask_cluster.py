"""The Dask backend against a real cluster on loopback: a scheduler and two single-threaded
workers, each its own process, as ``dask scheduler`` / ``dask worker`` start them on machines.

- the CLI through the cluster prints the serial answers, and the workers did the work;
- a worker killed mid-sweep costs nothing but time: its tasks run again on the other one;
- a scheduler that does not answer is a one-line error with exit code 2.

The in-process ``LocalCluster`` check lives in ``test_evaluate.py``; this module is about what
only separate processes show (pickling to other interpreters, lost workers, the CLI's errors).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the Dask tests need the optional extra: pip install 'sgdsim[dask]'")
from dask.distributed import Client  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESNET = str(ROOT / "examples" / "profiles" / "resnet50.json")
START_TIMEOUT = 60  # seconds for the scheduler and both workers to come up on a slow machine


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each, then SIGKILL whatever has not exited after a grace period."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


class DaskCluster:
    """A scheduler and named workers (``w0``, ``w1``) in separate processes; ``close`` ends them."""

    def __init__(self, tmp: Path, n_workers: int = 2):
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.workers: dict[str, subprocess.Popen] = {}
        self.client: Client | None = None
        try:
            self._start(n_workers)
        except BaseException:  # a failed start leaves no process behind either
            self.close()
            raise

    def _start(self, n_workers: int) -> None:
        sched_file = self.tmp / "scheduler.json"
        # port 0: the scheduler takes a free port and writes its address to the file, which the
        # workers wait for, so all three processes start (and import Dask) at once
        self.scheduler = self._spawn("scheduler", [
            "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
            "--no-dashboard", "--scheduler-file", str(sched_file), "--idle-timeout", "600"])
        for i in range(n_workers):
            name = f"w{i}"
            self.workers[name] = self._spawn(name, [
                "distributed.cli.dask_worker", "--scheduler-file", str(sched_file),
                "--name", name, "--nthreads", "1", "--nworkers", "1", "--no-nanny",
                "--no-dashboard", "--host", "127.0.0.1", "--memory-limit", "0",
                "--local-directory", str(self.tmp / name),
                "--death-timeout", "60"])
        deadline = time.monotonic() + START_TIMEOUT
        while not self._address(sched_file):
            self._check_alive()
            assert time.monotonic() < deadline, f"the scheduler did not start\n{self.logs()}"
            time.sleep(0.05)
        self.address = self._address(sched_file)
        self.client = Client(self.address, timeout="30s")
        try:
            self.client.wait_for_workers(n_workers, timeout=max(5.0, deadline - time.monotonic()))
        except TimeoutError:
            raise AssertionError(f"the workers did not join\n{self.logs()}") from None

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")
        try:
            p = subprocess.Popen([sys.executable, "-m", *args], cwd=self.tmp, env=_env(),
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        self.procs.append(p)
        return p

    @staticmethod
    def _address(path: Path) -> str | None:
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):
            return None  # not written yet, or half written

    def _check_alive(self) -> None:
        dead = [p.args[2] for p in self.procs if p.poll() is not None]
        assert not dead, f"{dead} exited during start-up\n{self.logs()}"

    def logs(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}"
                         for f in sorted(self.tmp.glob("*.log")))

    def executed(self) -> dict[str, int]:
        """Tasks each live worker process has run, by worker name."""
        counts = self.client.run(lambda dask_worker: (dask_worker.name, dask_worker.state.executed_count))
        return dict(counts.values())

    def processing(self) -> dict[str, list[str]]:
        """The keys the scheduler has handed to each worker and not yet had back, by worker name."""
        return self.client.run_on_scheduler(lambda dask_scheduler: {
            ws.name: [ts.key for ts in ws.processing] for ws in dask_scheduler.workers.values()})

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.close(timeout=5)
            except Exception:
                pass
        _stop(self.procs[1:])  # the workers first: they leave a scheduler that still answers
        _stop(self.procs[:1])


@pytest.fixture
def dask_cluster(tmp_path):
    """A fresh cluster per test (the kill test spends one of its workers); always torn down."""
    cluster = DaskCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


def _sgdsim(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sgdsim.cli", *args], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def _predict_args(workers: str, steps: int) -> list[str]:
    return ["predict", RESNET, "--workers", workers, "--bandwidth", "1Gbps", "--steps", str(steps),
            "--replications", "2", "--format", "json", "-q"]


def _points(stdout: str) -> list[dict]:
    """The JSON points without the wall-clock fields, which differ from run to run."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "wall_s"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return strip(json.loads(stdout))


def _serial(workers: str, steps: int) -> list[dict]:
    r = _sgdsim(*_predict_args(workers, steps), "--jobs", "1")
    assert r.returncode == 0, r.stderr
    return _points(r.stdout)


def test_the_cluster_gives_the_serial_answers_and_does_the_work(dask_cluster):
    workers = "1,2,4,8"
    before = dask_cluster.executed()
    assert set(before) == {"w0", "w1"}
    r = _sgdsim(*_predict_args(workers, 20), "--backend", "dask", "--scheduler", dask_cluster.address)
    assert r.returncode == 0, f"{r.stderr}\n{dask_cluster.logs()}"
    dasked = _points(r.stdout)
    assert [p["workers"] for p in dasked] == [1, 2, 4, 8]
    assert dasked == _serial(workers, 20)

    # every point was a task run by a worker process (one thread each), and both took part
    ran = {name: n - before[name] for name, n in dask_cluster.executed().items()}
    assert sum(ran.values()) == 4, ran
    assert all(n >= 1 for n in ran.values()), ran


def test_a_worker_killed_mid_sweep_is_survived(dask_cluster):
    # 8 points of about half a second each: long enough to kill a worker while it computes
    workers = "10,12,14,16,18,20,22,24"
    args = [*_predict_args(workers, 200), "--backend", "dask", "--scheduler", dask_cluster.address]
    sweep = subprocess.Popen([sys.executable, "-m", "sgdsim.cli", *args], cwd=ROOT, env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            busy = {name: keys for name, keys in dask_cluster.processing().items() if keys}
            if busy:
                break
            assert sweep.poll() is None, f"the sweep ended before any task was seen: {sweep.communicate()}"
            assert time.monotonic() < deadline, "the sweep's tasks never reached the workers"
            time.sleep(0.02)
        victim = sorted(busy)[0]
        lost = busy[victim]
        dask_cluster.workers[victim].send_signal(signal.SIGKILL)
        assert dask_cluster.workers[victim].wait(timeout=10) == -signal.SIGKILL

        deadline = time.monotonic() + 30
        while len(dask_cluster.processing()) != 1:
            assert time.monotonic() < deadline, "the scheduler never noticed the dead worker"
            time.sleep(0.05)
        out, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait(timeout=10)
    assert sweep.returncode == 0, f"{err}\n{dask_cluster.logs()}"
    survivor = next(n for n in dask_cluster.workers if n != victim)
    assert dask_cluster.workers[survivor].poll() is None

    # the tasks the dead worker held were handed out again (to the survivor) and completed
    story = dask_cluster.client.run_on_scheduler(
        lambda dask_scheduler: [(t[0], t[2]) for t in dask_scheduler.story(*lost)])
    for key in lost:
        assert sum(1 for k, finish in story if k == key and finish == "processing") >= 2, (key, story)
        assert any(k == key and finish == "memory" for k, finish in story), (key, story)
    assert _points(out) == _serial(workers, 200)


def test_a_scheduler_that_does_not_answer_is_a_one_line_error():
    # a port bound but not listening: connections are refused, and nothing else can take it
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = _sgdsim(*_predict_args("1,2", 20), "--backend", "dask",
                    "--scheduler", f"tcp://127.0.0.1:{port}", timeout=60)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith(f"sgdsim: error: cannot reach the Dask scheduler 'tcp://127.0.0.1:{port}'")
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("\n")
    assert "Traceback" not in r.stderr
