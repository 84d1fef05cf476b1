"""Commands on profiles and calibration: ``import``, ``info``, ``calibrate``,
``calibrate-threshold``."""
from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..spec import ARCHITECTURES
from ..spec.registries import DEFAULT_ARCH
from ..outputs import check_output_path
from ..units import format_bps
from .common import add_large_model_arguments, check_applies, positive_floats
from ..progress import say


def register(sub) -> dict:
    _import_parser(sub)
    info = sub.add_parser("info", help="summarise a profile, or a large model's shape and one block's ops")
    info.add_argument("profile", help="profile JSON (.json or .json.gz), or gpt:..., llama:..., a config.json")
    cal = sub.add_parser("calibrate-threshold", help="pick the Eq. 5 threshold from measured throughputs",
                         description="Compare measured async-PS throughputs with the coarse model "
                                     "for every threshold and print the best --rho-threshold. "
                                     "Example: examples/calibrate/measured-async.csv")
    cal.add_argument("measured", help="CSV with a header line workers,throughput (examples/s), "
                                      "one measured point per line")
    cal.add_argument("profile", help="profile JSON of the measured job")
    cal.add_argument("--bandwidth", default="10Gbps", help="NIC bandwidth of the measured runs")
    cal_defaults = {a.dest: a.default for a in _calibrate_parser(sub)._actions}
    return {"import": cmd_import, "info": cmd_info,
            "calibrate": lambda args: cmd_calibrate_worker(args, cal_defaults),
            "calibrate-threshold": cmd_calibrate}


def _calibrate_parser(sub):
    c = sub.add_parser("calibrate", help="fit what a profile misses from one real worker's step "
                                         "time; writes a hardware file")
    c.add_argument("profile", help="the standalone profile (sgdsim profile) of the job, or a large model "
                                   "(gpt:..., llama:..., a config.json) with --layout and --step-time")
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--step-time", metavar="T[,T...]",
                      help="measured mean step time of the worker, e.g. 1.72s; several runs: "
                           "1.72s,1.75s,1.70s (their spread widens every prediction interval)")
    what.add_argument("--throughput", metavar="X[,X...]",
                      help="measured examples/s of the single worker (all-reduce: of one rank); "
                           "several runs: 9.17,9.33,9.31")
    what.add_argument("--pilot", metavar="RUNS.csv",
                      help="a pilot run at a few small worker counts: CSV with workers and "
                           "throughput (examples/s of all workers) columns, a row per run, two or "
                           "more worker counts (e.g. 1 and 2); fits the receiver CPU and the "
                           "link's goodput jointly (docs/calibration.md)")
    c.add_argument("--hardware", default=None, metavar="FILE.json",
                   help="the network as measured by sgdsim netbench (bandwidth, β, ...) (default: none; "
                        "required with a profile)")
    c.add_argument("--arch", default=DEFAULT_ARCH, choices=ARCHITECTURES.names,
                   help="ps: 1 worker + 1 PS was measured; allreduce: 2 ranks")
    c.add_argument("--mode", default="async", choices=["async", "sync"], help="the mode of the measured run")
    c.add_argument("--bucket-size", default=None, metavar="SIZE",
                   help="--arch allreduce: the measured run's DDP gradient buckets, e.g. 25MiB "
                        "(PyTorch's default); predict with the same --bucket-size (default: one "
                        "call per layer)")
    c.add_argument("--no-overlap", action="store_true",
                   help="the measured framework moves data only after the step's compute on its side "
                        "(predict --no-overlap); predict with it too")
    c.add_argument("-o", "--output", required=True, help="the calibrated hardware file (a device "
                                                              "catalogue .toml for a large model)")
    c.add_argument("--force", action="store_true", help="overwrite an existing output file")
    c.add_argument("--workers", default=None, help="with a large model: the GPUs of the measured run "
                                                   "(default: from --layout)")
    add_large_model_arguments(c, "the measured run's tp=..,pp=..,dp=..,mb=..,batch=..")
    return c


def _import_parser(sub) -> None:
    imp = sub.add_parser("import", help="convert a profile from another tool")
    isub = imp.add_subparsers(dest="source", required=True)
    pd = isub.add_parser("pipedream", help="PipeDream graph.txt per-layer profile",
                         description="Convert a PipeDream profiler graph.txt (per-layer forward "
                                     "and backward times, activation and parameter sizes) into "
                                     "an sgdsim profile. Bundled graphs: examples/pipedream/.")
    pd.add_argument("graph", help="the graph.txt file")
    pd.add_argument("--batch-size", type=int, required=True,
                    help="the mini-batch the graph was profiled with")
    pd.add_argument("--update-s-per-mb", type=float, default=0.0, metavar="SECONDS",
                    help="PS update time in seconds per MB (1e6 bytes) of parameters")
    _import_outputs(pd, "graph")
    _kineto_parser(isub)


def _import_outputs(p, source: str) -> None:
    """What every importer asks besides its input: overlap, the model's name, the output."""
    ov = p.add_mutually_exclusive_group()
    ov.add_argument("--overlap", dest="overlap", action="store_true", default=True,
                    help="communication overlaps computation layer by layer (default)")
    ov.add_argument("--no-overlap", dest="overlap", action="store_false",
                    help="pull all parameters before, push all gradients after the pass")
    p.add_argument("--model-name", default=None,
                   help=f"name recorded in the profile (default: the {source} file's name)")
    p.add_argument("-o", "--output", required=True, help="profile file to write (.json or .json.gz)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")


def _kineto_parser(isub) -> None:
    kt = isub.add_parser("kineto", help="torch.profiler (Kineto) Chrome trace of training steps",
                         description="Convert a torch.profiler Chrome trace (record_shapes=True; "
                                     "layers annotated by record_function('layer: NAME') or "
                                     "with_stack=True) into an sgdsim profile: per-layer forward "
                                     "and backward from the ops (CPU) or kernels (GPU), parameter "
                                     "sizes, gradient-ready order. Record one with "
                                     "examples/kineto/record_trace.py; docs/profile-format.md.")
    kt.add_argument("trace", help="the trace file (.json or .json.gz)")
    kt.add_argument("--batch-size", type=int, required=True,
                    help="the mini-batch the trace was recorded with")
    _import_outputs(kt, "trace")


def cmd_calibrate(args) -> int:
    from ..calibrate import calibrate_threshold, read_measured

    measured = read_measured(args.measured)
    result = calibrate_threshold(args.profile, measured, args.bandwidth)
    print("rho_T  mean |err| %  max |err| %")
    for rho, mean, worst in result.table:
        mark = "  <- best" if rho == result.best else ""
        print(f"{rho:5.1f}  {mean:11.2f}  {worst:10.2f}{mark}")
    print(f"best --rho-threshold {result.best:g}")
    return 0


def cmd_calibrate_worker(args, defaults: dict | None = None) -> int:
    from ..llm import is_description

    llm = is_description(args.profile)
    check_applies(args, defaults or {}, llm, model_only=("workers",), either=("step_time", "output", "force"))
    if llm:
        return _calibrate_llm(args)
    if args.hardware is None:
        raise ConfigError("the following arguments are required: --hardware")
    return _calibrate_profile(args)


def _calibrate_llm(args) -> int:
    from ..llm import device, load_transformer, parse_layout
    from ..llm.calibrate import STEPS, fit_gemm_efficiency, write_catalogue
    from ..progress import Progress
    from ..units import parse_duration_with_unit_s
    from .llm_cmd import one_gpu_count

    if args.step_time is None or args.layout is None:
        raise ConfigError("a large model is calibrated from --step-time and its --layout")
    check_output_path(args.output, args.force)
    model = load_transformer(args.profile, args.seq)
    layout = parse_layout(args.layout, one_gpu_count(args.workers))
    dev = device(args.device, args.devices)
    steps = [parse_duration_with_unit_s(v, "--step-time") for v in args.step_time.split(",")]
    mean_s = sum(steps) / len(steps)
    with Progress(STEPS, "fitting the GEMM efficiency to the measured step") as bar:
        eff = fit_gemm_efficiency(model, layout, dev, mean_s, progress=bar.advance)
    fitted = replace(dev, gemm_efficiency=round(eff, 6))
    write_catalogue(fitted, args.output, f"gemm_efficiency fitted by sgdsim calibrate to a measured step of "
                    f"{mean_s:.4g} s ({model.name}, {args.layout})", args.force)
    print(f"{dev.key}: gemm_efficiency {dev.gemm_efficiency:g} -> {eff:.4f}; wrote {args.output} "
          f"(use it with --devices {args.output})")
    return 0


def _calibrate_profile(args) -> int:
    from ..calibrate_worker import calibrate, summary
    from ..hardware import load_hardware, save_hardware
    from ..profile.io import load_profile
    from ..spec import Strategy
    from ..units import parse_duration_with_unit_s, parse_size_with_unit_bytes

    check_output_path(args.output, args.force)
    bucket = None if args.bucket_size is None else parse_size_with_unit_bytes(args.bucket_size, "--bucket-size")
    Strategy(arch=args.arch, mode=args.mode, bucket_size_bytes=bucket)  # checked before the work
    prof = load_profile(args.profile)
    if args.no_overlap:
        from ..profile.transforms import without_overlap

        prof = without_overlap(prof)
    hw = load_hardware(args.hardware)
    if args.pilot is not None:
        return _calibrate_pilot(args, prof, hw, bucket)
    if args.step_time is not None:
        steps = [parse_duration_with_unit_s(v, "--step-time") for v in args.step_time.split(",")]
    else:
        steps = [prof.job.batch_size / x for x in positive_floats(args.throughput, "--throughput")]
    out = calibrate(prof, steps, hw, args.arch, args.mode, bucket_size_bytes=bucket)
    save_hardware(out, args.output, force=args.force)
    print(f"{summary(out, args.arch)}; wrote {args.output}")
    return 0


def _calibrate_pilot(args, prof, hw, bucket: float | None) -> int:
    from ..calibrate import read_measured
    from ..calibrate_pilot import SEARCH_STEPS, calibrate_pilot
    from ..hardware import save_hardware
    from ..progress import Progress

    runs = read_measured(args.pilot)
    with Progress(SEARCH_STEPS, "fitting the pilot") as bar:
        fit = calibrate_pilot(prof, runs, hw, args.arch, args.mode,
                              progress=lambda i, n: bar.advance(), bucket_size_bytes=bucket)
    save_hardware(fit.hardware, args.output, force=args.force)
    errs = ", ".join(f"W={w} {r:+.1f} %" for w, r in fit.residuals_pct)
    known = (f"±{1.96 * fit.sd_log_bandwidth:.1%}, 95 %" if fit.sd_log_bandwidth > 0 else
             "these runs do not tell it from the receiver CPU, and no prediction depends on the split")
    print(f"pilot of {len(runs)} runs: receiver CPU {fit.alpha_s_per_byte * 1e9:.3g} ns/byte, "
          f"goodput {fit.bandwidth_bps / 1e6:.4g} Mbit/s ({known}); "
          f"fit error {errs}; wrote {args.output}")
    return 0


def cmd_import(args) -> int:
    from ..profile.io import save_profile
    from ..profile.pipedream import import_pipedream

    check_output_path(args.output, args.force)  # before the work, not after
    if args.source == "kineto":
        return _import_kineto(args)
    prof = import_pipedream(args.graph, args.batch_size, overlap=args.overlap,
                            update_s_per_mb=args.update_s_per_mb, model_name=args.model_name)
    save_profile(prof, args.output, overwrite=args.force)
    say(f"wrote {args.output}: {prof.job.model}, {prof.n_ops} ops, "
          f"{prof.model_bytes() / 1e6:.1f} MB of parameters, batch {prof.job.batch_size}")
    return 0


def _import_kineto(args) -> int:
    from ..profile.io import save_profile
    from ..profile.kineto import import_kineto

    prof = import_kineto(args.trace, args.batch_size, overlap=args.overlap,
                         model_name=args.model_name)
    save_profile(prof, args.output, overwrite=args.force)
    info = prof.extra["kineto"]
    say(f"wrote {args.output}: {prof.job.model}, {info['layers']} layers, {prof.n_ops} ops, "
        f"{prof.model_bytes() / 1e6:.2f} MB of parameters, batch {prof.job.batch_size}, "
        f"{prof.n_steps} step(s), forward+backward {prof.mean_compute_s() * 1e3:.2f} ms "
        f"({info['time']})")
    return 0


def cmd_info(args) -> int:
    from ..llm import is_description
    from ..profile.io import load_profile

    if is_description(args.profile):
        print(_llm_info(args.profile))
        return 0
    p = load_profile(args.profile)
    kinds: dict[str, int] = {}
    for op in p.ops:
        kinds[op.resource] = kinds.get(op.resource, 0) + 1
    bw = format_bps(p.job.bandwidth_bps) if p.job.bandwidth_bps else "unknown"
    print(f"model {p.job.model}, batch {p.job.batch_size}, {p.n_steps} step(s), {p.n_ops} ops "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    print(f"parameters {p.model_bytes() / 1e6:.2f} MB over {p.ps_count} PS; forward+backward "
          f"{p.mean_compute_s() * 1e3:.1f} ms; overlap {p.job.overlap}; profiled bandwidth {bw}")
    from ..profiler.memory import describe as memory_line
    from ..profiler.quality import describe, profiler_notes, recorded

    quality = recorded(p)
    if quality is not None:
        print(f"measurement: {describe(quality)}")
    line = memory_line(profiler_notes(p) or {})
    if line:
        print(f"memory: {line}")
    return 0


def _llm_info(text: str) -> str:
    """A large model: its shape, its sizes, one block's forward ops (one sequence, no TP)."""
    from ..llm import load_transformer
    from ..llm.ops import block_ops

    m = load_transformer(text)
    kind = "Llama-style (SwiGLU, RMSNorm)" if m.glu else "GPT-style (GeLU, LayerNorm)"
    lines = [f"{m.name}: {m.layers} layers, hidden {m.hidden}, {m.heads} heads ({m.kv_heads} key/value), "
             f"ffn {m.ffn}, vocabulary {m.vocab}, sequence {m.seq}; {kind}",
             f"parameters {m.params() / 1e9:.2f} B ({m.layer_params() / 1e6:.1f} M per block); "
             f"training FLOPs per token {m.step_flops(1, False) / m.seq / 1e9:.1f} G "
             f"({m.step_flops(1, True) / m.seq / 1e9:.1f} G with full recomputation)",
             "one block's forward, one sequence:", f"  {'op':<30} {'GFLOP':>10} {'MB moved':>10}"]
    lines += [f"  {op.name:<30} {op.flops / 1e9:>10.2f} {op.traffic / 1e6:>10.2f}" for op in block_ops(m, 1, 1)]
    return "\n".join(lines)
