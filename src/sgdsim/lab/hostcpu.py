"""``sgdsim netbench --host-cpu``: the hosts' CPU per byte (``spec/host.py``), measured on
one machine without root.

- ``tcp_cpu_s_per_byte``: two processes stream ``tcp_bytes`` over loopback TCP; the CPU
  seconds of both ends (``time.process_time`` in each) over 2·bytes: per byte, per end.
  Loopback has no NIC offload, so this is an upper bound of a real NIC's kernel cost.
- ``reduce_cpu_s_per_byte``: numpy float32 ``a += b`` on arrays of ``reduce_bytes``; the
  median time over ``repeats``, per byte of ``a``.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import socket
import statistics
import time

import numpy as np

TCP_BYTES = 256 * 2**20  # at least 200 MB: a few hundred ms of loopback
REDUCE_BYTES = 64 * 2**20
REPEATS = 7
CHUNK = 1 << 20


def _receive(port: int, total: int, out) -> None:
    """The receiving end (a process of its own): reads ``total`` bytes, reports its CPU seconds."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        t0 = time.process_time()
        got = 0
        while got < total:
            n = conn.recv_into(view, min(CHUNK, total - got))
            if n == 0:
                break
            got += n
        out.send((time.process_time() - t0, got))
        conn.sendall(b"k")


def tcp_cpu_s_per_byte(total_bytes: int = TCP_BYTES) -> dict:
    """CPU seconds per byte per end of a loopback TCP stream of ``total_bytes``."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        proc = ctx.Process(target=_receive, args=(port, total_bytes, child), daemon=True)
        proc.start()
        try:
            conn, _ = server.accept()
            with conn:
                payload = memoryview(b"\0" * CHUNK)
                t0, w0 = time.process_time(), time.perf_counter()
                sent = 0
                while sent < total_bytes:
                    n = min(CHUNK, total_bytes - sent)
                    conn.sendall(payload[:n])
                    sent += n
                conn.recv(1)  # the receiver has everything
                send_cpu, wall = time.process_time() - t0, time.perf_counter() - w0
            recv_cpu, got = parent.recv()
        finally:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    if got != total_bytes:
        raise RuntimeError(f"loopback stream ended after {got} of {total_bytes} bytes")
    return {"tcp_cpu_s_per_byte": (send_cpu + recv_cpu) / (2 * total_bytes), "bytes": total_bytes,
            "sender_cpu_s": send_cpu, "receiver_cpu_s": recv_cpu, "wall_s": wall}


def reduce_cpu_s_per_byte(size_bytes: int = REDUCE_BYTES, repeats: int = REPEATS) -> dict:
    """Seconds per byte of ``a`` of a float32 ``a += b`` (median of ``repeats``, after one warm-up)."""
    n = max(1, size_bytes // 4)
    a, b = np.ones(n, np.float32), np.full(n, 1e-3, np.float32)
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        a += b
        if i:
            times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    return {"reduce_cpu_s_per_byte": median / a.nbytes, "bytes": int(a.nbytes), "repeats": repeats,
            "median_s": median}


def measure_host_cpu(tcp_bytes: int = TCP_BYTES, reduce_bytes: int = REDUCE_BYTES,
                     repeats: int = REPEATS) -> dict:
    """Both costs: ``{"tcp_cpu_s_per_byte", "reduce_cpu_s_per_byte", "tcp", "reduce"}``."""
    tcp = tcp_cpu_s_per_byte(tcp_bytes)
    red = reduce_cpu_s_per_byte(reduce_bytes, repeats)
    return {"tcp_cpu_s_per_byte": tcp["tcp_cpu_s_per_byte"],
            "reduce_cpu_s_per_byte": red["reduce_cpu_s_per_byte"], "tcp": tcp, "reduce": red}


def with_host_cpu(hw, measured: dict):
    """The hardware file with the measured costs (its other fields kept)."""
    return dataclasses.replace(hw, tcp_cpu_s_per_byte=measured["tcp_cpu_s_per_byte"],
                               reduce_cpu_s_per_byte=measured["reduce_cpu_s_per_byte"],
                               measured={**hw.measured, "host_cpu": measured})
