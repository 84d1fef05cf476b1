"""The hardware file that ``netbench`` and ``calibrate`` write, as keywords of a prediction.

The file is read and checked by ``hardware.load_hardware``; ``Hardware.predict_kwargs`` is
the one mapping of its fields to keywords (``parse/keywords.py``). Explicit keywords win over
the file; an explicit two-way penalty replaces the file's table and its corrections.
"""
from __future__ import annotations

from ..hardware import Hardware
from ..spec import ARCHITECTURES, Cluster, Control, Strategy
from ..spec.registries import DEFAULT_ARCH
from .keywords import specs

TABLE_KEYS = ("two_way_table", "two_way_busy", "two_way_busy_shape", "two_way_busy_shaped", "two_way_joined",
              "two_way_joined_after", "two_way_joined_draws")


def hardware_keywords(hw: Hardware, given: dict, *, tcp_dynamics: bool | None = None) -> dict:
    """The file's keywords for the strategy in ``given`` (its arch, mode, PS count, sharing and
    flow cap decide which measured dynamics apply), overridden by ``given``'s values that are
    not None."""
    net = hw.predict_kwargs(given.get("arch") or DEFAULT_ARCH, given.get("mode"), given.get("ps_count"),
                            given.get("sharing"), tcp_dynamics=tcp_dynamics,
                            flow_capped=given.get("flow_cap") is not None)
    if given.get("two_way_penalty") is not None:
        for key in TABLE_KEYS:
            net.pop(key, None)
    return {**net, **{k: v for k, v in given.items() if v is not None}}


def specs_from_hardware(hw: Hardware, arch: str, **given) -> tuple[Strategy, Cluster, Control]:
    """The specs of one architecture on the file's network, its measured late-comer dynamics
    kept aside for the strategies they apply to (``sim.config.late_comer``): one cluster for
    every strategy of a plan or a validation grid."""
    if given.get("mode") is None:  # the architecture's first mode, as predict's default is
        given["mode"] = ARCHITECTURES[arch].modes[0]
    kw = hardware_keywords(hw, {"arch": arch, **given}, tcp_dynamics=False)
    return specs(**kw, measured_late_comer=hw.late_comer())
