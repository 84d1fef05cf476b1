"""What the hosts' CPUs pay per byte: the transport's kernel work, reductions run on the
host, and a parameter server's framework work (deserialise and apply, serialise).

Units: seconds of one core per byte. The defaults charge nothing (every answer as without
them); ``sgdsim netbench --host-cpu`` measures ``tcp_cpu_s_per_byte`` and
``reduce_cpu_s_per_byte`` on one machine (``lab/hostcpu.py``); docs/hosts.md has the formulas.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .limits import MAX_OVERHEAD_ALPHA_S_PER_BYTE, check_range

TRANSPORTS = ("tcp", "rdma")  # rdma: the NIC moves the bytes, no host CPU per byte
REDUCE_ON = ("device", "host")  # device: NCCL reduces on the GPU; host: gloo, MPI


@dataclass(frozen=True)
class Host:
    """``transport``: over TCP a host spends ``tcp_cpu_s_per_byte`` of CPU per byte it sends
    or receives; ``reduce_on`` host: a collective spends ``reduce_cpu_s_per_byte`` per byte
    reduced; ``server_cpu_s_per_byte``: a parameter server's CPU per byte it receives or sends."""

    transport: str = "tcp"
    tcp_cpu_s_per_byte: float = 0.0
    reduce_on: str = "device"
    reduce_cpu_s_per_byte: float = 0.0
    server_cpu_s_per_byte: float = 0.0

    def __post_init__(self):
        for value, option, known in ((self.transport, "--transport", TRANSPORTS),
                                     (self.reduce_on, "--reduce-on", REDUCE_ON)):
            if value not in known:
                raise ConfigError(f"{option} must be one of {', '.join(known)}, got {value!r}")
        for name, option in (("tcp_cpu_s_per_byte", "--tcp-cpu"), ("reduce_cpu_s_per_byte", "--reduce-cpu"),
                             ("server_cpu_s_per_byte", "--server-cpu")):
            object.__setattr__(self, name, check_range(
                getattr(self, name), option, 0.0, MAX_OVERHEAD_ALPHA_S_PER_BYTE,
                text=f"seconds per byte in [0, {MAX_OVERHEAD_ALPHA_S_PER_BYTE:g}]"))

    @property
    def tcp_s_per_byte(self) -> float:
        """CPU per byte an end of a transfer pays for the transport (0 over RDMA)."""
        return self.tcp_cpu_s_per_byte if self.transport == TRANSPORTS[0] else 0.0

    @property
    def reduce_s_per_byte(self) -> float:
        """CPU per byte reduced (0 when the device reduces)."""
        return self.reduce_cpu_s_per_byte if self.reduce_on == REDUCE_ON[1] else 0.0

    @property
    def server_s_per_byte(self) -> float:
        """A parameter server's CPU per byte it receives or sends: its framework and transport."""
        return self.server_cpu_s_per_byte + self.tcp_s_per_byte

    @property
    def charges(self) -> bool:
        """Whether any cost is charged."""
        return self.tcp_s_per_byte > 0 or self.reduce_s_per_byte > 0 or self.server_cpu_s_per_byte > 0

    def allreduce_s(self, size_bytes, ranks: int):
        """Each rank's CPU for one all-reduce call of ``size_bytes`` over ``ranks``: it sends
        and receives 2(N−1)/N·S and reduces (N−1)/N·S."""
        share = (ranks - 1) / ranks
        return share * size_bytes * (2.0 * self.tcp_s_per_byte + self.reduce_s_per_byte)
