"""The table ``sgdsim netbench`` prints: the point-to-point fit and what each extra
measurement (--fanout, --two-way, --joiner, --gloo, --interference) added to the hardware file."""
from __future__ import annotations

from ..units import format_bps


def print_table(m, hw) -> None:
    if m is not None:
        _print_point_to_point(m, hw)
    _print_extras(hw)


def _print_point_to_point(m, hw) -> None:
    print(f"{'size':>12}  {'median':>11}  {'repeats':>7}  {'rate':>12}  {'fit':>11}")
    fit = m.fit()
    for size, t, reps in zip(m.sizes_bytes, m.median_s, m.repeats):
        model = hw.overhead_alpha_s_per_byte * size + hw.overhead_beta_s
        print(f"{size_text(size):>12}  {t * 1e3:9.3f}ms  {reps:7d}  {format_bps(8 * size / t):>12}  "
              f"{model * 1e3:9.3f}ms")
    if m.skipped_bytes:
        print(f"skipped (budget): {', '.join(size_text(s) for s in m.skipped_bytes)}")
    print(f"bandwidth {format_bps(hw.bandwidth_bps)} (1/alpha), alpha {hw.overhead_alpha_s_per_byte:.4g} "
          f"s/B, beta {hw.overhead_beta_s * 1e6:.1f} us, latency {hw.latency_s * 1e6:.1f} us "
          f"(RTT/2); {m.elapsed_s:.1f} s")
    print(f"fit of time = alpha·size + beta: R² {fit.r_squared:.4f}; the worst size is "
          f"{fit.max_rel_residual:.0%} off the line (small messages, where latency and scheduling "
          f"noise dominate, miss it most; bandwidth comes from the large ones)")
    if fit.beta_s < 0:
        print(f"the fit's intercept beta was {fit.beta_s * 1e6:.1f} us: a per-message cost below "
              "what the line resolves, stored as 0")


def _print_extras(hw) -> None:
    """The fields, and the raw figures behind them where ``measured`` has them (it is
    free-form: a file written by hand, or an older sgdsim, may lack any of them)."""
    g = hw.measured
    if hw.allreduce_bandwidth_bps is not None:
        raw = (f"send/recv {format_bps(g['gloo_p2p_bandwidth_bps'])}; " if "gloo_p2p_bandwidth_bps" in g
               else "")
        ranks = f" over {g['gloo_ranks']} ranks" if "gloo_ranks" in g else ""
        print(f"gloo: {raw}ring all-reduce{ranks} behaves like "
              f"Eq. 11 at {format_bps(hw.allreduce_bandwidth_bps)}"
              + (f" ({_beta_text(g['allreduce_beta_s'])})" if "allreduce_beta_s" in g else "")
              + (f"; {hw.ring_latency_s * 1e3:.2f} ms per ring step"
                 if hw.ring_latency_s is not None else ""))
    if hw.fcfs_weight is not None:
        rounds = (f"; downlink rounds {g['fcfs_weight_down']:.3f}, uplink rounds "
                  f"{g['fcfs_weight_up']:.3f}" if {"fcfs_weight_down", "fcfs_weight_up"} <= g.keys()
                  else "")
        n = f"{g['fanout']} " if "fanout" in g else ""
        print(f"sharing: {n}concurrent transfers finish like "
              f"{1 - hw.fcfs_weight:.0%} PS + {hw.fcfs_weight:.0%} FCFS (fcfs_weight "
              f"{hw.fcfs_weight:.3f}{rounds})")
    if hw.two_way_penalty is not None:
        print(f"two-way traffic: a NIC direction loses {hw.two_way_penalty:.0%} of its capacity "
              f"per surplus flow the other way (--two-way-penalty {hw.two_way_penalty:.3f})")
    if hw.two_way_table is not None:
        t = hw.two_way_table
        print(f"two-way table ({len(t[0]) - 1} flows): 1 against 3 keeps {t[0][1][3]:.2f} out, "
              f"{t[1][1][3]:.2f} in; 4 against 4 keeps {t[0][4][4]:.2f} out, {t[1][4][4]:.2f} in"
              if len(t[0]) > 4 else f"two-way table ({len(t[0]) - 1} flows) measured")
    if hw.allreduce_compute_share is not None:
        size = g.get("interference_size_bytes")
        rounds = ", ".join(f"{s:.0%}" for s in g.get("interference_shares", []))
        print(f"interference: an all-reduce{f' of {size_text(size)}' if size else ''} occupies "
              f"{hw.allreduce_compute_share:.0%} of a worker's compute while it runs "
              f"({f'rounds: {rounds}; ' if rounds else ''}--allreduce-compute-share)")
    if hw.share_cv is not None:
        print(f"unequal shares: the first of them ends early, as with per-flow weights of CV "
              f"{hw.share_cv:.2f} (--share-cv)")
    if hw.join_boost is not None:
        push = (f"pushes {hw.join_boost_push:.2f} from {(hw.join_after_push_s or 0) * 1e3:.0f} ms"
                if hw.join_boost_push is not None else "pushes equal")
        print(f"late-comer: a transfer that joins one under way gets {hw.join_boost:.2f}× its weight "
              f"from {(hw.join_after_s or 0) * 1e3:.0f} ms on pulls, {push} (--join-boost, --join-after)")
        if hw.join_delay_s is not None:
            print(f"  after the joiner's onset: {hw.join_delay_s * 1e3:.0f} ms on pulls, "
                  f"{(hw.join_delay_push_s or 0) * 1e3:.0f} ms on pushes (--join-delay; applied by default)")


def _beta_text(beta_s: float) -> str:
    if beta_s >= 0:
        return f"beta {beta_s * 1e3:.2f} ms"
    return (f"the fit's intercept beta {beta_s * 1e3:.2f} ms is below what it resolves: "
            "no fixed cost per call is visible")


def size_text(n: int) -> str:
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return f"{n}B"
