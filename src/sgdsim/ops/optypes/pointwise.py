"""Element-wise operators: ReLU, GELU, and the arithmetic family (add, mul, tanh, dropout...).

An in-place arithmetic call (``add_``: the optimizer's update, a residual ``+=``) is the same
function with ``inplace`` 1: it writes into memory already in use, where an out-of-place call
writes a fresh output the allocator maps and the first write faults in, page by page (on
this machine an add of GPT-2's 39 M-element table: 0.4-0.5 ns an element in place, 1.8 out
of place). ``relu_`` reads as ``relu``. The timer replays in-place calls on a non-leaf copy
so that autograd accepts them.
"""
from __future__ import annotations

from ..template import Call, TSpec
from .base import OpType, beyond_cache, dense, grad, log_int, numel

# short name -> (aten call, tensor inputs, extra arguments) for the sampled grid
ARITH = {"add": ("aten.add.Tensor", 2, ()), "mul": ("aten.mul.Tensor", 2, ()),
         "sub": ("aten.sub.Tensor", 2, ()), "div": ("aten.div.Tensor", 2, ()),
         "mul_scalar": ("aten.mul.Scalar", 1, (0.5,)), "tanh": ("aten.tanh.default", 1, ()),
         "pow": ("aten.pow.Tensor_Scalar", 1, (3.0,)), "clone": ("aten.clone.default", 1, ()),
         "bernoulli_": ("aten.bernoulli_.float", 1, (0.9,))}
# dropout's mask: filled in place (a draw per element, 1 - p of them ones), never differentiated;
# never drawn before 2026-12-04, its calls (1-2 % of BERT's and GPT-2's steps) were estimated at
# the type's floor, no per-element cost of their own (docs/ops-runs.md, run 21)
MASKS = ("bernoulli_",)
ARITH_NAMES = tuple(sorted(ARITH))  # the order of the per-function prior terms
INPLACE_FNS = ("add", "div", "mul", "mul_scalar", "sub")  # those with an in-place variant
# in place, these need the target's old values for the other input's gradient (``mul_``:
# d(a·b)/db = a), so autograd copies the target before writing it: 0.37 ns an element
# against add_'s 0.17 on this machine (the four timed alike without a gradient)
SAVES_TARGET = ("div", "mul")
INPLACE_SHARE = 0.3
# their backward hands the incoming gradient on as it is (autograd's AddBackward0 and
# CloneBackward0 return it, no copy), so it costs about the same at 68 elements or 53 M (the
# grids' rows: 8-52 us); fitted with the per-element terms every other function shares,
# GPT-2's 12.7 M-element copy came out at 596x (docs/ops-runs.md, run 27). A broadcast add's
# backward is not one: it sums the gradient over the broadcast dimensions.
PASS_THROUGH = ("add", "clone")
_ALIASES = {"add_": "add", "mul_": "mul", "sub_": "sub", "div_": "div"}


def short_name(func: str) -> str:
    """"aten.add_.Tensor" -> "add"; "aten.mul.Scalar" -> "mul_scalar"; "aten.tanh.default" ->
    "tanh": what an element-wise call does, in-place or not."""
    _, name, overload = func.split(".")
    name = _ALIASES.get(name, name)
    return f"{name}_scalar" if overload == "Scalar" else name


def _shape_params(call: Call):
    tensors = [t for t in call.tensors() if t.dtype.startswith(("float", "bfloat"))]
    if not tensors:
        return None
    sizes = [t.numel for t in tensors]
    return {"numel": max(sizes), "bcast": int(len(set(sizes)) > 1),
            "gi": int(any(t.requires_grad for t in tensors))}


def arith_params(call: Call):
    p = _shape_params(call)
    return None if p is None else {"fn": short_name(call.func), **p, "inplace": int(call.inplace)}


def arith_build(p, dtype) -> Call:
    func, arity, extra = ARITH.get(p["fn"], ARITH["clone"])
    if int(p.get("inplace", 0)) and p["fn"] in INPLACE_FNS:  # "aten.add.Tensor" -> add_
        _, name, overload = func.split(".")
        func = f"aten.{name}_.{overload}"
    n = int(p["numel"])
    small = max(n // 64, 1) if int(p.get("bcast", 0)) else n
    tensors = [dense((n,), grad(p["gi"]), dtype)] + \
        [dense((small,) if small != n else (n,), grad(p["gi"]), dtype)] * (arity - 1)
    if small != n and arity == 2:  # broadcast: (64, n/64) against (n/64,)
        tensors = [dense((n // small, small), grad(p["gi"]), dtype),
                   dense((small,), grad(p["gi"]), dtype)]
    return Call(func, (*tensors, *extra))


VOCAB_SHARE, VOCAB_MAX = 0.1, 2 ** 26
# the optimizer's update: p.add_(g, alpha=-lr), one per parameter tensor, in place with no
# gradient; drawn at random the grid had 0-7 such adds in 100 rows (none in run 21's), and
# the models' 35 updates came out at 0.41x (docs/ops-runs.md, runs 21 and 22)
UPDATE_SHARE = 0.1


def arith_sample(rng):
    """Up to 8 M elements, and a share of the draws the size of a language model's tables
    (BERT's 23 M weights, GPT-2's 39 M): the optimizer updates a table with one add, a
    pass over memory no cache holds, which the smaller draws never reach (run 7: three such
    calls, 65 of the models' 118 ms of element-wise time). Those adds are in place: drawn
    only out of place, the large draws put the models' element-wise calls at 1.7-2.35x
    (docs/ops-runs.md, run 8). And a share of the draws is the optimizer's update itself
    (``UPDATE_SHARE``), at any parameter's size."""
    if rng.random() < UPDATE_SHARE:  # a parameter's size, up to the largest tables
        return {"fn": "add", "numel": log_int(rng, 64, VOCAB_MAX), "bcast": 0, "gi": 0, "inplace": 1}
    vocab = rng.random() < VOCAB_SHARE
    fn = str(rng.choice(sorted(ARITH)))
    bcast = int(ARITH[fn][1] == 2 and rng.random() < 0.3)  # only a pair of tensors broadcasts
    n = log_int(rng, 2 ** 23, VOCAB_MAX) if vocab else log_int(rng, 64, 2 ** 23)
    gi = int(rng.random() < 0.8)
    inplace = int(fn in INPLACE_FNS and rng.random() < INPLACE_SHARE)
    if fn in MASKS:
        gi, inplace = 0, 1
    return {"fn": fn, "numel": n // 64 * 64 if bcast else n, "bcast": bcast, "gi": gi,
            "inplace": inplace}


def _terms(p, dtype: str, cache_bytes: float, fixed_per_function: bool,
           shared: bool = True) -> list[float]:
    """``shared``: False leaves out the per-element terms every function has in common."""
    n, fn, inplace = float(p["numel"]), str(p["fn"]), int(p.get("inplace", 0))
    beyond = beyond_cache(n, ARITH.get(fn, ARITH["clone"])[1] + 1 - inplace, dtype, cache_bytes)
    n_all, beyond = (n, beyond) if shared else (0.0, 0.0)
    tracked = inplace * grad(p["gi"])
    saves = tracked * (fn in SAVES_TARGET)
    fixed = [float(fn == f and fixed_per_function) for f in ARITH_NAMES]
    return [1.0, float(grad(p["gi"])), n_all, *(n * (fn == f) for f in ARITH_NAMES),
            n * int(p["bcast"]), beyond, float(p["bcast"]), *fixed, n_all * (1 - inplace),
            float(1 - inplace + saves), float(fn.endswith("_scalar")),
            n * tracked, float(tracked), n * saves]


def arith_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """What an element-wise call's time is made of, one term per rate: a fixed cost,
    autograd's bookkeeping when an input needs a gradient, a pass over the elements, the same
    again per function (a division or a tanh costs more per element than an add), a
    broadcast's, and the elements whose bytes (inputs and output) do not fit in
    ``cache_bytes``: they stream from memory, slower. Then a fixed cost per broadcast (its
    iterator over strided dimensions is set up per call); a fixed cost per function is the
    backward's alone (each function's backward is its own few kernels, where every forward
    is one kernel through the same iterator: fitted per function, the forward's eight costs
    fitted noise, and the held-out forward median was 0.5-2.7 points higher on every EPYC
    grid, docs/ops-runs.md, run 16). Then an out-of-place call's output elements: fresh memory,
    mapped and faulted in as written. Then two fixed costs a kind of call pays, not a
    function: one per tensor the call allocates (an out-of-place output, and autograd's copy
    of an in-place target it saves), which in-place calls skip; and one per Scalar overload,
    whose number is wrapped into a tensor first (with one shared fixed cost, the grids' small
    in-place calls came out 20-30 % high and ``mul_scalar``'s 30 % low, docs/ops-runs.md,
    run 25). Last, an in-place call on a tensor that needs a
    gradient, per element and once: it writes into its own copy of the target
    (``measure.py``), not the warm one the copies share, and autograd checks and bumps the
    target's version; and per element again where autograd first copies the target's old
    values (``SAVES_TARGET``)."""
    return _terms(p, dtype, cache_bytes, False)


def arith_backward_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """The backward's terms: the forward's with a fixed cost per function, but for the
    forward's allocations, its wrapped number and the in-place call's own copy, version check
    and saved target, which its backward does not pay again (it reads the gradient and what
    was saved, not the target). An add's or a copy's backward (``PASS_THROUGH``) computes
    nothing per element: it has no share in the pass every other function makes, only its own
    rate, zero unless its rows fit one."""
    shared = not (p["fn"] in PASS_THROUGH and not int(p["bcast"]))
    return _terms(p, dtype, cache_bytes, True, shared)[:-5] + [0.0] * 5


def act_params(call: Call):
    x = call.args[0]
    out = {"numel": numel(x.shape), "gi": int(x.requires_grad)}
    if call.func.startswith("aten.gelu"):
        approx = dict(call.kwargs).get("approximate", call.args[1] if len(call.args) > 1
                                       else "none")
        out["approx"] = str(approx)
    return out


def _act_terms(p, dtype: str, cache_bytes: float, tensors: int) -> list[float]:
    n = float(p["numel"])
    tanh = float(p.get("approx", "none") == "tanh")
    return [1.0 - tanh, float(grad(p["gi"])), n, beyond_cache(n, tensors, dtype, cache_bytes),
            tanh, n * tanh]


def gelu_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """GELU's time, one term per rate: the exact form's fixed cost, autograd's bookkeeping
    when its input needs a gradient, a pass over the elements, the elements whose bytes (input
    and a fresh output) do not fit in ``cache_bytes``, then the tanh form's own fixed cost and
    its own cost again an element: each form is its own kernel (run 40's grid, forward: the
    tanh form's smallest calls 4 us against the exact form's 9-12, its largest 1.7 ns an
    element against 0.6; one shared fixed cost, rates being non-negative, priced the tanh
    form's small calls at 2x). Until run 44 GELU raced a network with and without a roofline,
    chosen on a fifth of 30 rows (run 40's grid: the roofline in 2 of 4 folds, 13.0 % held out
    where the network alone was at 6.2, docs/ops-runs.md, run 41). ReLU keeps that race: its
    terms were held out worse (run 43)."""
    return _act_terms(p, dtype, cache_bytes, 2)


def gelu_backward_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """The same over three tensors (the incoming gradient, the saved input, the gradient it
    writes)."""
    return _act_terms(p, dtype, cache_bytes, 3)


def relu_build(p, dtype) -> Call:
    return Call("aten.relu.default", (dense((p["numel"],), grad(p["gi"]), dtype),))


def gelu_build(p, dtype) -> Call:
    return Call("aten.gelu.default", (dense((p["numel"],), grad(p["gi"]), dtype),),
                (("approximate", p.get("approx", "none")),))


def act_sample(rng):
    return {"numel": log_int(rng, 64, 2 ** 24), "gi": int(rng.random() < 0.9)}


def gelu_sample(rng):
    return {**act_sample(rng), "approx": str(rng.choice(["none", "tanh"]))}


ARITH_FUNCS = tuple(f"aten.{n}.{o}" for n in ("add", "add_", "mul", "mul_", "sub", "sub_",
                                               "div", "div_") for o in ("Tensor", "Scalar")) + \
    ("aten.tanh.default", "aten.pow.Tensor_Scalar", "aten.clone.default",
     "aten.bernoulli_.float", "aten.where.self", "aten.rsqrt.default", "aten.exp.default")

RELU = OpType("relu", ("aten.relu.default", "aten.relu_.default"), frozenset({"numel"}),
              act_params, relu_build, act_sample, "ReLU")
GELU = OpType("gelu", ("aten.gelu.default",), frozenset({"numel"}), act_params, gelu_build,
              gelu_sample, "GELU (exact or tanh)", gelu_terms, gelu_backward_terms,
              added=(("approx", "none"),))
# three rows a rate, not five: its terms are per function and per kind of call (in place,
# saved targets, masks), each a pass over the elements on top of one shared pass, and five
# left several unfitted in every 100-row grid (docs/ops-runs.md, run 24)
ELTWISE = OpType("eltwise", ARITH_FUNCS, frozenset({"numel"}), arith_params, arith_build,
                 arith_sample, "element-wise arithmetic, dropout, copies", arith_terms,
                 arith_backward_terms, added=(("inplace", 0),), min_support=3)

__all__ = ["RELU", "GELU", "ELTWISE", "TSpec"]
