"""ICPE 2020 §3.2.2 / §3.3: HTTP/2 stream multiplexing delays the forward pass.

A stream's first service sends at most WIN bytes and, if bytes remain, goes to the back of
its link's queue; its second service sends the rest, however large (Fig. 12). With flow
control disabled (``fifo``) whole streams go one after another. One worker, B = 1 MB/s, so a
megabyte takes one second; every time below is computed by hand.
"""
from __future__ import annotations

import pytest

from conftest import approx, layered_profile, op_chunks, run_sim

MB = 1e6
# two layers of 2 MB, overlap: fwd:L0 needs down:L0 only; forward 1.5 s + 0.1 s
TWO = layered_profile([2 * MB, 2 * MB], [1.5, 0.1], [0.1, 0.1], overlap=True, batch=10)


def _run(prof, streams, window=None):
    kw = {"window_bytes": window} if window else {}
    return run_sim(prof, workers=1, Bps=MB, steps=1, streams=streams, **kw)


def test_fifo_sends_whole_streams_in_order():
    r = _run(TWO, "fifo")
    assert op_chunks(r, "down:L0") == [(approx(0.0), approx(2.0))]
    assert op_chunks(r, "down:L1") == [(approx(2.0), approx(4.0))]
    assert op_chunks(r, "fwd:L0") == [(approx(2.0), approx(3.5))]  # hidden behind down:L1
    assert op_chunks(r, "fwd:L1") == [(approx(4.0), approx(4.1))]
    # bwd:L1 [4.1, 4.2], bwd:L0 [4.2, 4.3]; up:L1 [4.2, 6.2], up:L0 [6.2, 8.2]
    assert op_chunks(r, "up:L1") == [(approx(4.2), approx(6.2))]
    assert op_chunks(r, "up:L0") == [(approx(6.2), approx(8.2))]
    assert r.step_time_s == approx(8.2)


def test_http2_switching_delays_the_forward_pass():
    """WIN = 1 MB: down:L0 sends 1 MB, down:L1 1 MB, then each the rest, so fwd:L0 starts at
    3 s instead of 2 s; the forward no longer hides behind down:L1 and the step is 0.5 s
    longer. On the way up, up:L0 (ready at 4.8) is served between up:L1's two chunks."""
    r = _run(TWO, "http2", 1 * MB)
    assert op_chunks(r, "down:L0") == [(approx(0.0), approx(1.0)), (approx(2.0), approx(3.0))]
    assert op_chunks(r, "down:L1") == [(approx(1.0), approx(2.0)), (approx(3.0), approx(4.0))]
    assert op_chunks(r, "fwd:L0") == [(approx(3.0), approx(4.5))]  # 1 s later than fifo
    assert op_chunks(r, "fwd:L1") == [(approx(4.5), approx(4.6))]  # waits for fwd:L0 now
    assert op_chunks(r, "up:L1") == [(approx(4.7), approx(5.7)), (approx(6.7), approx(7.7))]
    assert op_chunks(r, "up:L0") == [(approx(5.7), approx(6.7)), (approx(7.7), approx(8.7))]
    assert r.step_time_s == approx(8.7)
    assert r.throughput == approx(10 / 8.7)
    assert _run(TWO, "fifo").throughput == approx(10 / 8.2)


def test_a_window_as_large_as_every_stream_switches_nothing():
    """Streams no larger than WIN finish without switching: 28 MB (the paper's mean WIN)."""
    r = _run(TWO, "http2", 28 * MB)
    assert op_chunks(r, "fwd:L0") == [(approx(2.0), approx(3.5))]
    assert r.step_time_s == approx(8.2)


@pytest.mark.parametrize("window", [2 * MB])
def test_fig12_second_service_runs_to_completion(window):
    """Streams of 5, 1 and 2 MB, WIN = 2 MB: L0 sends 2 MB [0, 2]; L1 (1 MB ≤ WIN) and L2
    (2 MB, not more than WIN) go whole, [2, 3] and [3, 5]; L0's 3 MB rest (> WIN) goes in one
    second service [5, 8]. fwd:L0 waits until 8 s (5 s without multiplexing)."""
    prof = layered_profile([5 * MB, 1 * MB, 2 * MB], [0.1] * 3, [0.1] * 3, overlap=True)
    r = _run(prof, "http2", window)
    assert op_chunks(r, "down:L0") == [(approx(0.0), approx(2.0)), (approx(5.0), approx(8.0))]
    assert op_chunks(r, "down:L1") == [(approx(2.0), approx(3.0))]
    assert op_chunks(r, "down:L2") == [(approx(3.0), approx(5.0))]
    assert op_chunks(r, "fwd:L0") == [(approx(8.0), approx(8.1))]
    assert op_chunks(_run(prof, "fifo"), "fwd:L0") == [(approx(5.0), approx(5.1))]
