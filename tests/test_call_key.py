"""A call to time and the row it becomes share one key: ``ops measure`` skips a call whose key
the database holds (``collect.call_key`` against ``OpRecord.key``)."""
from sgdsim.ops.collect import call_key, timed_record
from sgdsim.ops.measure import Timing
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.records import Device

DEV = Device("cpu (1 threads, test)", "cpu", "pytorch x", "")


def test_a_timed_call_keys_as_its_row():
    for dtype in ("float32", "bfloat16"):
        params = {"numel": 4096, "gi": 1}
        item = ("relu", params, REGISTRY["relu"].build(params, dtype))
        t = Timing(fwd_s=1e-5, bwd_s=2e-5, samples=5, fwd_spread=0.01, bwd_spread=0.02, copies=8,
                   fwd_ref_s=3e-4, bwd_ref_s=4e-4)
        rec = timed_record(DEV, "relu", params, dtype, t)
        assert call_key(item) == rec.key[1:] == ("relu", rec.key[2], dtype)
        assert (rec.fwd_s, rec.bwd_s, rec.samples, rec.fwd_ref_s, rec.bwd_ref_s) == (1e-5, 2e-5, 5, 3e-4, 4e-4)
    def f32(numel):
        params = {"numel": numel, "gi": 1}
        return call_key(("relu", params, REGISTRY["relu"].build(params, "float32")))
    assert f32(4097) != f32(4096) == ("relu", call_key(item)[1], "float32")  # the shape, then the dtype
