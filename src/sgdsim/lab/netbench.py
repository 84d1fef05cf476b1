"""Point-to-point bandwidth and latency over real TCP: a tiny server and a measuring client.

``python -m sgdsim.lab.netbench serve --port P`` runs the server; ``measure(host, port)`` (or
``python -m sgdsim.lab.netbench client --host H --port P``) times messages of growing size.

Protocol: the server greets with ``GREETING``; the client sends a 9-byte header (op, size) and
for op ``S`` then ``size`` bytes, and the server answers one byte once it has them all. One
sample is the time from the first header byte sent to the answer received, so it covers the
whole transfer plus one small round trip (that round trip ends up in β).
"""
from __future__ import annotations

import argparse
import json
import math
import socket
import selectors
import statistics
import struct
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field

from ..errors import ConfigError, SgdsimError
from ..units import parse_size_bytes
from ..hardware import Fit, Hardware, fit_overhead, hardware_from
from .procs import stop

GREETING = b"SGDSIM-NETBENCH-1\n"
_HDR = struct.Struct("!cQ")
_ACK = b"\x06"
_CHUNK = 4 << 20
DEFAULT_SIZES = "1KiB-256MiB"
_READY = "netbench listening on"
IO_TIMEOUT_S = 120.0  # per blocking call, so a dead peer cannot hang us forever


@dataclass
class Measurement:
    """Raw medians of one netbench run (sizes in bytes, times in seconds)."""

    sizes_bytes: list[int]
    median_s: list[float]
    repeats: list[int]
    rtt_s: float
    pings: int
    skipped_bytes: list[int] = field(default_factory=list)
    elapsed_s: float = 0.0
    target: str = ""

    def fit(self) -> Fit:
        return fit_overhead(self.sizes_bytes, self.median_s)

    def hardware(self) -> Hardware:
        return hardware_from(self.fit(), self.rtt_s, asdict(self))


# ----------------------------------------------------------------------------- sizes

def parse_sizes(spec: str | list) -> list[int]:
    """'1KiB-256MiB' -> 1KiB, 4KiB, ... ×4 up to 256MiB; '1KB,64KB,1MB' -> those."""
    if isinstance(spec, (list, tuple)):
        out = [int(parse_size_bytes(s)) for s in spec]
    elif "-" in spec and "," not in spec:
        lo_s, _, hi_s = spec.partition("-")
        lo, hi = int(parse_size_bytes(lo_s)), int(parse_size_bytes(hi_s))
        if lo < 1 or hi < lo:
            raise ConfigError(f"bad size range {spec!r} (use e.g. 1KiB-256MiB)")
        out, s = [], lo
        while s < hi:
            out.append(s)
            s *= 4
        out.append(hi)
    else:
        out = [int(parse_size_bytes(s)) for s in str(spec).split(",") if s.strip()]
    if not out or min(out) < 1:
        raise ConfigError(f"message sizes must be at least 1 byte, got {spec!r}")
    return sorted(set(out))


# ----------------------------------------------------------------------------- server

def serve(bind: str = "0.0.0.0", port: int = 0, *, once: bool = False, announce=None) -> None:
    """Accept clients forever (or one, with ``once``); one thread per client.

    The first stdout line, ``netbench listening on HOST PORT``, tells a parent which port
    ``--port 0`` got; ``announce(line)`` replaces the print.
    """
    srv = socket.create_server((bind, port))
    with srv:
        host, real_port = srv.getsockname()[:2]
        (announce or _print_flush)(f"{_READY} {host} {real_port}")
        while True:
            conn, _ = srv.accept()
            if once:
                _handle(conn)
                return
            threading.Thread(target=_handle, args=(conn,), daemon=True).start()


def _print_flush(line: str) -> None:
    print(line, flush=True)


def _handle(conn: socket.socket) -> None:
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(IO_TIMEOUT_S)
        try:
            conn.sendall(GREETING)
            while True:
                hdr = _recv_exact(conn, _HDR.size)
                if hdr is None:
                    return
                op, size = _HDR.unpack(hdr)
                if op != b"S":
                    return
                left = size
                while left:
                    n = conn.recv_into(view[:min(left, _CHUNK)])
                    if not n:
                        return
                    left -= n
                conn.sendall(_ACK)
        except OSError:
            return  # a client that vanished is its own problem, the server keeps serving


def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        part = conn.recv(n - len(data))
        if not part:
            return None
        data += part
    return data


# ----------------------------------------------------------------------------- client

class _Client:
    def __init__(self, host: str, port: int, connect_timeout: float):
        try:
            self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as exc:
            raise SgdsimError(f"cannot connect to netbench server {host}:{port} "
                              f"({exc.strerror or exc}); start one with "
                              f"'python -m sgdsim.lab.netbench serve --port {port}'") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(IO_TIMEOUT_S)
        if _recv_exact(self.sock, len(GREETING)) != GREETING:
            self.sock.close()
            raise SgdsimError(f"{host}:{port} is not a sgdsim netbench server")
        self.payload = memoryview(bytes(_CHUNK))

    def send(self, size: int) -> float:
        """Seconds to deliver ``size`` bytes and hear back."""
        t0 = time.perf_counter()
        if size <= 65536:  # one write, so small messages are not split header/payload
            self.sock.sendall(_HDR.pack(b"S", size) + self.payload[:size])
        else:
            self.sock.sendall(_HDR.pack(b"S", size))
            left = size
            while left:
                n = min(left, _CHUNK)
                self.sock.sendall(self.payload[:n])
                left -= n
        if self.sock.recv(1) != _ACK:
            raise SgdsimError("netbench server closed the connection mid-measurement")
        return time.perf_counter() - t0

    def close(self) -> None:
        try:
            self.sock.sendall(_HDR.pack(b"Q", 0))
        except OSError:
            pass
        self.sock.close()


def measure(host: str, port: int, *, sizes=DEFAULT_SIZES, repeats: int = 5, pings: int = 50,
            max_bytes: float = 1e9, max_seconds: float = 60.0, connect_timeout: float = 5.0,
            progress=None) -> Measurement:
    """Median transfer time per size and the median small-message round trip.

    Budgets: sizes are measured smallest first; a size gets fewer repeats (or is skipped and
    listed in ``skipped_bytes``) when the remaining ``max_bytes`` or the time predicted by the
    fit so far from the remaining ``max_seconds`` cannot cover them.
    """
    sizes = parse_sizes(sizes)
    if repeats < 1 or pings < 1:
        raise ConfigError("repeats and pings must be at least 1")
    cl = _Client(host, port, connect_timeout)
    t_start = time.perf_counter()
    try:
        for _ in range(5):  # warm-up: connection setup, page faults, TCP window growth
            cl.send(0)
        cl.send(min(max(sizes), 1 << 20))
        rtt = statistics.median(cl.send(0) for _ in range(pings))
        m = Measurement([], [], [], rtt, pings, target=f"{host}:{port}")
        budget = float(max_bytes)
        for size in sizes:
            reps = _affordable(m, size, repeats, budget, max_seconds - (time.perf_counter() - t_start))
            if reps < 1:
                m.skipped_bytes.append(size)
                continue
            times = [cl.send(size) for _ in range(reps)]
            budget -= size * reps
            m.sizes_bytes.append(size)
            m.median_s.append(statistics.median(times))
            m.repeats.append(reps)
            if progress:
                progress(size, m.median_s[-1], reps)
    except OSError as exc:  # timeouts, resets, unreachable hosts: one line, not a traceback
        raise SgdsimError(f"netbench connection to {host}:{port} failed: {exc}") from None
    finally:
        cl.close()
    m.elapsed_s = time.perf_counter() - t_start
    if len(m.sizes_bytes) < 2:
        raise ConfigError(f"only {len(m.sizes_bytes)} message size fit the budget; "
                          "raise --max-bytes/--max-seconds or use smaller --sizes")
    return m


def _affordable(m: Measurement, size: int, repeats: int, budget: float, time_left: float) -> int:
    reps = min(repeats, int(budget // size))
    if len(m.sizes_bytes) >= 2 and reps > 0:
        try:
            est = fit_overhead(m.sizes_bytes, m.median_s).time_s(size)
        except ConfigError:
            est = 0.0  # not yet growing with size (tiny messages): no time estimate yet
        if est > 0:
            reps = min(reps, int(time_left // est))
    return reps


# ----------------------------------------------------------------------------- local and lab runs

def server_argv(bind: str) -> list[str]:
    return [sys.executable, "-m", "sgdsim.lab.netbench", "serve", "--bind", bind, "--port", "0", "--once"]


def wait_ready(proc: subprocess.Popen, timeout_s: float = 30.0) -> int:
    """The port a freshly started server announced on its stdout."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    ready = sel.select(timeout_s)
    sel.close()
    line = proc.stdout.readline() if ready else ""
    if not line.startswith(_READY):
        stop(proc)
        err = proc.stderr.read().strip().splitlines() if proc.stderr else []
        raise SgdsimError(f"netbench server did not start ({err[-1] if err else 'no answer'})")
    return int(line.split()[-1])




def run_local(**kwargs) -> Measurement:
    """Server and client on the loopback interface (server in a child process)."""
    proc = subprocess.Popen(server_argv("127.0.0.1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        return measure("127.0.0.1", wait_ready(proc), **kwargs)
    finally:
        stop(proc)


def run_lab(server: int = 0, client: int = 1, *, lab=None, **kwargs) -> Measurement:
    """Server on lab host ``server``, client on lab host ``client``.

    ``lab``: a ``LabCluster``; by default the one ``sgdsim lab up`` started.
    """
    from .cluster import LabCluster

    lab = lab or LabCluster.attach()
    if not (0 <= server < lab.hosts and 0 <= client < lab.hosts) or server == client:
        raise ConfigError(f"lab hosts must be two different indices in 0..{lab.hosts - 1}")
    proc = lab.popen(server, server_argv(lab.address(server)), stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    try:
        port = wait_ready(proc)
        argv = [sys.executable, "-m", "sgdsim.lab.netbench", "client", "--host",
                lab.address(server), "--port", str(port)] + _client_options(kwargs)
        res = lab.run(client, argv, capture_output=True, text=True)
        if res.returncode != 0:
            lines = res.stderr.strip().splitlines()
            raise SgdsimError(lines[-1].removeprefix("sgdsim: error: ") if lines else
                              f"netbench client exited with code {res.returncode}")
        return measurement_from_json(res.stdout)
    finally:
        stop(proc)


def _client_options(kw: dict) -> list[str]:
    sizes = kw.get("sizes", DEFAULT_SIZES)
    sizes = ",".join(str(int(s)) for s in parse_sizes(sizes))
    return ["--sizes", sizes, "--repeats", str(kw.get("repeats", 5)), "--pings",
            str(kw.get("pings", 50)), "--max-bytes", repr(float(kw.get("max_bytes", 1e9))),
            "--max-seconds", repr(float(kw.get("max_seconds", 60.0)))]


# ----------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sgdsim.lab.netbench")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run a netbench server")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, default=5201)
    s.add_argument("--once", action="store_true", help="exit after one client")
    c = sub.add_parser("client", help="measure against a server; prints the raw medians as JSON")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, default=5201)
    add_measure_options(c)
    args = p.parse_args(argv)
    try:
        if args.cmd == "serve":
            serve(args.bind, args.port, once=args.once)
        else:
            m = measure(args.host, args.port, **measure_kwargs(args))
            print(json.dumps(asdict(m)))
        return 0
    except SgdsimError as exc:
        print(f"sgdsim: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"sgdsim: error: netbench: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def add_measure_options(p) -> None:
    p.add_argument("--sizes", default=DEFAULT_SIZES,
                   help="message sizes: range 1KiB-256MiB (×4 steps) or list 1KB,64KB,1MB")
    p.add_argument("--repeats", type=int, default=5, help="transfers per size (median taken)")
    p.add_argument("--pings", type=int, default=50, help="small round trips for the latency")
    p.add_argument("--max-bytes", default="1GB", help="cap on the bytes sent in all")
    p.add_argument("--max-seconds", type=float, default=60.0, help="cap on the measuring time")


def measure_kwargs(args) -> dict:
    max_bytes = parse_size_bytes(args.max_bytes)
    if not math.isfinite(max_bytes) or max_bytes <= 0:
        raise ConfigError(f"--max-bytes must be positive, got {args.max_bytes!r}")
    for option, value, top in (("--repeats", args.repeats, 1000), ("--pings", args.pings, 100_000)):
        if not 1 <= value <= top:
            raise ConfigError(f"{option} must be from 1 to {top:,}, got {value}")
    if not 0 < args.max_seconds <= 3600:  # nan fails too
        raise ConfigError(f"--max-seconds must be in (0, 3600], got {args.max_seconds}")
    return dict(sizes=args.sizes, repeats=args.repeats, pings=args.pings,
                max_bytes=max_bytes, max_seconds=args.max_seconds)


def measurement_from_json(text: str) -> Measurement:
    try:
        return Measurement(**json.loads(text))
    except (ValueError, TypeError) as exc:
        raise SgdsimError(f"netbench client printed no measurement ({exc})") from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
