"""How a job is distributed: the architecture and its options, each name owned by a registry
(``registries.py``). Units: bytes."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .limits import MAX_BUCKET_BYTES, MAX_PS_COUNT, check_range
from .registries import (ARCHITECTURES, COLLECTIVES, DEFAULT_ARCH, DEFAULT_COLLECTIVE, DEFAULT_ORDER,
                         DEFAULT_STREAMS, MODES, ORDERS, SHARINGS, STREAMS)

DEFAULT_RHO_THRESHOLD = 0.6


@dataclass(frozen=True)
class Strategy:
    """``sharing`` None: the papers' default for the architecture and mode (its
    ``default_sharing``); ``ps_count`` None: the profile's own placement; ``bucket_size_bytes``
    None: one collective call per layer. ``rho_threshold``: the coarse model's Eq. 5.
    ``overlap`` False: every transfer waits for the step's compute on its side, whatever the
    profile's DAG allows (``profile/transforms.without_overlap``)."""

    arch: str = DEFAULT_ARCH
    mode: str = MODES[0]
    sharing: str | None = None
    ps_count: int | None = None
    streams: str = DEFAULT_STREAMS
    window_bytes: float = 28e6
    order: str = DEFAULT_ORDER
    collective: str = DEFAULT_COLLECTIVE
    bucket_size_bytes: float | None = None
    rho_threshold: float = DEFAULT_RHO_THRESHOLD
    overlap: bool = True  # False: transfers wait for the whole step's compute (--no-overlap)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ConfigError(f"unknown --mode {self.mode!r} (choose from {', '.join(MODES)})")
        arch = ARCHITECTURES[self.arch]
        for registry, name in ((STREAMS, self.streams), (ORDERS, self.order), (COLLECTIVES, self.collective)):
            registry.check(name)
        if self.sharing is not None:
            SHARINGS.check(self.sharing)
        if self.mode not in arch.modes:
            raise ConfigError(f"--arch {self.arch} runs --mode {' or '.join(arch.modes)}, not {self.mode}")
        if self.ps_count is not None and (isinstance(self.ps_count, bool) or not isinstance(self.ps_count, int)
                                          or not 1 <= self.ps_count <= MAX_PS_COUNT):
            raise ConfigError(f"--ps-count must be from 1 to {MAX_PS_COUNT}, got {self.ps_count}")
        check_range(self.window_bytes, "HTTP/2 window", 0.0, float("inf"), lo_open=True, text="positive")
        check_range(self.rho_threshold, "--rho-threshold", 0.0, 1.0, lo_open=True)
        if not isinstance(self.overlap, bool):
            raise ConfigError(f"overlap must be True or False (--no-overlap), got {self.overlap!r}")
        if self.bucket_size_bytes is not None:
            check_range(self.bucket_size_bytes, "--bucket-size", 1.0, MAX_BUCKET_BYTES, text="from 1B to 100GB")
        self._check_options(arch)

    def _check_options(self, arch) -> None:
        """An option of another architecture is refused, never ignored."""
        given = (("collective", self.collective != DEFAULT_COLLECTIVE, "--collective"),
                 ("bucket_size", self.bucket_size_bytes is not None, "--bucket-size"),
                 ("ps_count", (self.ps_count or 1) > 1, "--ps-count"),
                 ("sharing", self.sharing is not None, "--sharing"))
        for option, on, flag in given:
            if on and option not in arch.options:
                raise ConfigError(f"{flag} applies to {where(option)}, not --arch {self.arch}")
        if self.streams != DEFAULT_STREAMS and self.order != DEFAULT_ORDER:
            raise ConfigError("--order applies to --streams fifo (HTTP/2 serves streams in arrival order)")

    @property
    def architecture(self):
        return ARCHITECTURES[self.arch]

    @property
    def fine_sharing(self) -> str:
        """The simulator's sharing: as given where the simulator has it, else the
        architecture's default for the mode (hybrid for sync PS, TPDS §3.1.1)."""
        if self.sharing is not None and SHARINGS[self.sharing].simulated:
            return self.sharing
        return self.architecture.default_sharing(self.mode)

    def measured_dynamics_apply(self, flow_capped: bool) -> bool:
        return measured_dynamics_apply(self.arch, self.mode, self.ps_count, self.sharing, flow_capped)

    @property
    def label(self) -> str:
        """A short name: async-ps, async-ps/2 (two servers), sync-ps, allreduce."""
        return self.architecture.label(self.mode, self.ps_count)


def where(option: str) -> str:
    """The architectures an option applies to: "--arch ps" or "--arch a or --arch b"."""
    return " or ".join(f"--arch {n}" for n, a in ARCHITECTURES.items() if option in a.options)


def measured_dynamics_apply(arch: str, mode: str, ps_count: int | None, sharing: str | None,
                            flow_capped: bool = False) -> bool:
    """Where a hardware file's measured TCP dynamics apply: an architecture whose flows they
    were measured on, async, one server, fair sharing (the coarse model's Eq. 5 is its name
    for it), no flow cap (capped flows are not weighted). ``predict``, the hardware file and
    the planner all ask here."""
    return (ARCHITECTURES[arch].tcp_dynamics and mode == MODES[0] and (ps_count or 1) == 1
            and (sharing is None or SHARINGS[sharing].fair) and not flow_capped)
