"""An option the configuration would ignore is an error, never silently dropped: one check
for the command line's options and the Python API's keywords (a keyword is named as its
option's dest: ``--two-way-penalty`` is ``two_way_penalty``). Only what the user gave is
checked; a hardware file's values apply where they were measured, without a word."""
from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from ..spec import ARCHITECTURES, MODES, SHARINGS, STREAMS
from ..spec.registries import DEFAULT_ARCH
from ..spec.strategy import where

# The measured dynamics of PS transfers (TCP's) and of workers sharing a host: (dest, whether
# they apply to async PS only, or to PS of either mode). All are the simulator's.
MEASURED_DYNAMICS = (("join_boost", True), ("join_after", True), ("join_delay", True),
                     ("stall_prob", False), ("stall_mean", False), ("stall_incumbent", False),
                     ("stall_incumbent_mean", False), ("host_contention", False))
SIMULATOR_ONLY = ("steps", "warmup", "replications", "jitter", "timeline", "seed",
                  *(dest for dest, _ in MEASURED_DYNAMICS))


def check_relevance(given: Mapping[str, Any], model: str, heterogeneous: bool = False) -> None:
    """``given``: the options or keywords given (None, [] or False: not given); ``model``: the
    model asked; ``heterogeneous``: worker classes instead of one profile."""
    for dest, ignored_here, applies in _rules(given, model, heterogeneous):
        if ignored_here and given.get(dest) not in (None, [], False):
            raise ConfigError(f"--{dest.replace('_', '-')} applies to {applies}; this configuration "
                              "would ignore it")
    sharing = _sharing(given)
    if not sharing.simulated and model not in ("coarse", "all"):
        coarse_only = next(n for n, s in SHARINGS.items() if not s.simulated)
        raise ConfigError(f"--sharing {coarse_only} is the coarse model's Eq. 5: use --model coarse or all")


def ignored(given: Mapping[str, Any], model: str) -> set[str]:
    """The keywords this configuration ignores (a hardware file's values for other strategies)."""
    return {dest for dest, ignored_here, _ in _rules(given, model, False) if ignored_here}


def _sharing(given: Mapping[str, Any]):
    arch = ARCHITECTURES[given.get("arch") or DEFAULT_ARCH]
    return SHARINGS[given.get("sharing") or arch.default_sharing(given.get("mode") or MODES[0])]


def _rules(given: Mapping[str, Any], model: str, heterogeneous: bool) -> list[tuple[str, bool, str]]:
    """(dest, whether this configuration ignores it, what it applies to)."""
    mode, streams = given.get("mode") or MODES[0], given.get("streams")
    arch, sharing, fifo = ARCHITECTURES[given.get("arch") or DEFAULT_ARCH], _sharing(given), STREAMS.names[0]
    simulated = model in ("fine", "all")
    return [
        *((opt, opt not in arch.options, where(opt)) for opt in _arch_options()),
        ("order", streams not in (None, fifo), f"--streams {fifo}"),
        ("window", streams in (None, fifo), "--streams " + " or ".join(STREAMS.names[1:])),
        ("intra_bandwidth", (given.get("gpus_per_node") or 1) == 1, "--gpus-per-node above 1"),
        ("host_cores", mode != "sync", "--mode sync (async workers compute at different times)"),
        *((dest, dest not in arch.options or (async_only and mode != MODES[0]),
           (f"--mode {MODES[0]} " if async_only else "") + where(dest))
          for dest, async_only in MEASURED_DYNAMICS),
        ("fcfs_weight", not sharing.runs, "a mixed sharing policy (--sharing "
         + " or ".join(n for n, s in SHARINGS.items() if s.runs) + "; the default for sync PS)"),
        ("rho_threshold", model not in ("coarse", "all") or not arch.servers
         or mode != MODES[0] or sharing.simulated and given.get("sharing") is not None,
         "the coarse model of async PS with the Eq. 5 threshold (--model coarse or all)"),
        ("workers", heterogeneous, "a homogeneous sweep (not with --worker-profile)"),
        *((dest, "collective" not in arch.options, "an all-reduce (" + where("collective") + ")")
          for dest in ("reduce_on", "reduce_cpu")),
        ("server_cpu", not arch.pulls, "parameter servers (" + " or ".join(
            f"--arch {n}" for n, a in ARCHITECTURES.items() if a.pulls) + ")"),
        *((opt, not simulated, "the simulator (--model fine or all)") for opt in SIMULATOR_ONLY),
        *((opt, model not in ("fine", "coarse", "all"), "the simulator and the coarse model "
           "(the baselines' error is not measured)") for opt in ("model_error", "interval_level")),
    ]


def _arch_options() -> list[str]:
    """Every architecture's own options, but the measured dynamics (checked with their mode)."""
    pairs = {dest for dest, _ in MEASURED_DYNAMICS}
    return list(dict.fromkeys(o for a in ARCHITECTURES.values() for o in a.options if o not in pairs))
