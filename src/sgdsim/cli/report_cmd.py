"""``sgdsim report``: predictions for one or more profiles as one self-contained HTML page."""
from __future__ import annotations

from ..errors import ConfigError
from ..outputs import check_output_path
from .model_options import add_model_arguments, keywords, run_prediction
from ..progress import say


def register(sub) -> dict:
    r = sub.add_parser(
        "report", help="an HTML report: throughput, scaling efficiency and utilization per model",
        description="Predict every PROFILE with the same options (as sgdsim predict) and write one "
                    "self-contained HTML page that opens without network. Example: sgdsim report "
                    "examples/profiles/resnet50.json examples/profiles/vgg16.json --model all "
                    "--workers 1-16 -o report.html")
    r.add_argument("profiles", nargs="*", metavar="PROFILE",
                   help="profile JSON files (or give --coarse, or a heterogeneous job's "
                        "--worker-profile classes)")
    add_model_arguments(r)
    r.add_argument("-o", "--output", required=True, metavar="FILE.html", help="the report to write")
    r.add_argument("--force", action="store_true", help="overwrite an existing report")
    r.add_argument("--validation", metavar="POINTS.csv",
                   help="a sgdsim validate points.csv: adds how far predictions landed from those "
                        "measured runs, by worker count (signed: a bias shows) (default: none, no "
                        "validation section)")
    return {"report": cmd_report}


def cmd_report(args) -> int:
    check_output_path(args.output, args.force)
    if args.validation:
        from ..report.validation import read_points

        args.validation_points = read_points(args.validation)  # a bad file fails before any work
    given = [bool(args.profiles), bool(args.coarse), bool(args.worker_profile)]
    if not any(given):
        raise ConfigError("give at least one PROFILE (or --coarse, or --worker-profile classes)")
    if sum(given) > 1:
        raise ConfigError("give profiles, --coarse or --worker-profile classes: one of them")
    args.timeline, args.profile = None, None
    runs = [(p, run_prediction(args, profile=p, notes=i == 0)[0])
            for i, p in enumerate(args.profiles or [None])]
    write_report(args, [(p or "coarse", pts) for p, pts in runs], args.output, None)
    return 0


def write_report(args, runs, path: str, timeline: str | None) -> None:
    """``runs``: (profile path or label, points) pairs."""
    from .. import __version__
    from ..report import ReportInput, Series, write_html
    from ..report.inputs import input_rows

    series, profiles = [], []
    for source, points in runs:
        if args.worker_profile:  # one heterogeneous job: a row per worker class
            summaries = [_class_summary(spec) for spec in args.worker_profile]
        else:
            summaries = [_profile_summary(source, args.coarse)]
        profiles += summaries
        name = " + ".join(s["name"] for s in summaries)
        for model in dict.fromkeys(p.model for p in points):
            series.append(Series(label=f"{name} · {model}", profile=name,
                                 model=model,
                                 points=tuple(p.to_dict() for p in points if p.model == model)))
    inputs = input_rows(prediction_specs(args), tuple(series), tuple(profiles), args.model,
                        args.hardware)
    report = ReportInput(title="sgdsim prediction", series=tuple(series), profiles=tuple(profiles),
                         inputs=inputs, hardware=_hardware(args.hardware),
                         timeline=timeline, generated_by=f"sgdsim {__version__}",
                         validation=getattr(args, "validation_points", ()),
                         validation_source=getattr(args, "validation", None) or "")
    write_html(report, path, args.force)
    say(f"wrote {path}")


def prediction_specs(args):
    """The strategy, cluster and control the prediction ran with: ``predict`` builds them from
    these very keywords (``model_options.keywords``: the options, then the hardware file's,
    then the defaults), and the inputs block reads them rather than the options."""
    from ..parse.keywords import specs
    from ..report.inputs import Specs

    return Specs.of(*specs(**keywords(args)), hardware=args.hardware)


def _profile_summary(source, coarse: str | None) -> dict:
    from ..evaluate.jobs import fine_profile
    from ..predict import load_any_profile
    from ..analytic.coarse_profile import parse_coarse

    prof = fine_profile(parse_coarse(coarse) if coarse else load_any_profile(source))
    return {"name": prof.job.model, "path": str(source) if not coarse else f"--coarse {coarse}",
            "batch_size": prof.job.batch_size, "parameters_MB": round(prof.model_bytes() / 1e6, 2),
            "compute_ms": round(prof.mean_compute_s() * 1e3, 2), "ops": prof.n_ops,
            "overlap": prof.job.overlap}


def _class_summary(spec: str) -> dict:
    """A heterogeneous job's worker class (``--worker-profile CLASS=PROFILE.json:COUNT``)."""
    from ..predict import parse_worker_profile

    name, path, count = parse_worker_profile(spec)
    return {**_profile_summary(path, None), "name": f"{name} ×{count}"}


def _hardware(path: str | None) -> dict | None:
    if not path:
        return None
    from ..hardware import load_hardware

    load_hardware(path)  # validated as predict validated it
    from ..errors import ProfileError
    from ..tagged_json import read_json

    return read_json(path, "hardware file", ProfileError)
