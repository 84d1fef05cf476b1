"""The parameter server's wire protocol: length-prefixed messages over one TCP connection.

Header ``!BIIQ``: message type, tensor index, step, payload length; then the payload. Tensors
travel as their raw fp32 bytes, one message per tensor, so a receiver can use a layer as soon
as its own tensors arrived (that is what --overlap exploits). Messages of one worker:

    worker -> PS   HELLO(rank)                    once
    PS -> worker   START(payload: t0 as JSON)     when all W workers said hello
    worker -> PS   PULL(step)                     at the start of every step
    PS -> worker   TENSOR(i, step, bytes) x n     parameters in layer order
    worker -> PS   GRAD(i, step, bytes) x n       gradients, in the order they became ready

Also the child processes' reporting: one JSON object per stdout line (``emit``).
"""
from __future__ import annotations

import json
import socket
import struct
import sys
import time

import torch

HELLO, START, PULL, TENSOR, GRAD = range(1, 6)
_HEADER = struct.Struct("!BIIQ")


def now() -> float:
    """CLOCK_MONOTONIC: one clock for every process on the machine, whatever its namespace."""
    return time.monotonic()


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def tune(sock: socket.socket) -> None:
    # small control messages (PULL, HELLO) must not wait for Nagle behind a pending ACK
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def send_msg(sock: socket.socket, kind: int, index: int = 0, step: int = 0, payload=b"") -> None:
    view = memoryview(payload).cast("B") if not isinstance(payload, bytes) else payload
    sock.sendall(_HEADER.pack(kind, index, step, len(view)))
    if len(view):
        sock.sendall(view)


def recv_header(sock: socket.socket) -> tuple[int, int, int, int]:
    buf = bytearray(_HEADER.size)
    recv_exact(sock, memoryview(buf))
    return _HEADER.unpack(buf)


def recv_exact(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("peer closed the connection")
        got += n


def recv_payload(sock: socket.socket, length: int) -> bytes:
    buf = bytearray(length)
    recv_exact(sock, memoryview(buf))
    return bytes(buf)


def recv_into_tensor(sock: socket.socket, length: int, tensor: torch.Tensor) -> None:
    view = tensor_bytes(tensor)
    if length != len(view):
        raise ConnectionError(f"tensor size mismatch: got {length} bytes, expected {len(view)}")
    recv_exact(sock, view)


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's own memory as bytes (no copy): contiguous CPU tensors only."""
    return memoryview(tensor.detach().numpy()).cast("B")


def expect(sock: socket.socket, kind: int) -> tuple[int, int, int]:
    got, index, step, length = recv_header(sock)
    if got != kind:
        raise ConnectionError(f"protocol error: message type {got}, expected {kind}")
    return index, step, length


def connect(host: str, port: int, timeout_s: float = 120.0) -> socket.socket:
    """Retry until the server listens (its process may still be importing torch)."""
    deadline = now() + timeout_s
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=5.0)
            sock.settimeout(None)
            tune(sock)
            return sock
        except OSError:
            if now() > deadline:
                raise
            time.sleep(0.1)


def fail(exc: BaseException) -> None:
    """Children report errors as one JSON line (the runner shows it) and exit with 2."""
    emit("error", message=f"{type(exc).__name__}: {exc}".splitlines()[0])
    sys.exit(2)
