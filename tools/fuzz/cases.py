"""Case generators: one family of invocations each (profiles, predict, plan, optimize, ...)."""
from __future__ import annotations

import gzip
import random

from .inputs import (ALEXNET, BIG_INT, BW_BAD, BW_GOOD, LAYERS, MEASURED, OPTIMIZE_MODELS,
                     OPTIMIZE_OPTIONS, PLAN_OPTIONS, PREDICT_OPTIONS, TINY, csv_text, graph_text,
                     hardware_text, profile_text)


# ----------------------------------------------------------------------------- case generators

class Case:
    """One input: argv, files to create in the case folder, and outputs that already exist."""

    def __init__(self, family: str, argv: list[str], files: dict[str, bytes] | None = None,
                 existing: list[str] | None = None, notes: list[str] | None = None,
                 timeout_s: float | None = None):
        self.family = family
        self.argv = argv
        self.files = files or {}
        self.existing = existing or []
        self.notes = notes or []
        self.timeout_s = timeout_s


def tiny_for(model: str) -> list[str]:
    """The cheap simulator settings for a model that runs the simulator; none for the others
    (which refuse --steps & co. as options they would ignore)."""
    return TINY if model in ("fine", "all") else ["--jobs", "1"]


def _model_of(argv: list[str], default: str = "fine") -> str:
    model = default
    for i, a in enumerate(argv[:-1]):
        if a == "--model":
            model = argv[i + 1]
    return model if model in ("fine", "coarse", "lin", "cynthia", "all") else "fine"


def _pick_options(rng: random.Random, table: dict[str, list[str]], k_max: int) -> list[str]:
    argv: list[str] = []
    for opt in rng.sample(sorted(table), rng.randint(0, k_max)):
        argv += [opt, rng.choice(table[opt])]
    return argv


def gen_profile_case(rng: random.Random, base: dict) -> Case:
    data, notes = profile_text(rng, base)
    name = rng.choice(["p.json", "p.json", "p.json.gz", "p"])
    if name.endswith(".gz") and rng.random() < 0.7 and not data.startswith(b"\x1f\x8b"):
        data = gzip.compress(data)
    cmd = rng.choice(["info", "coarse", "coarse", "fine", "all", "sync", "allreduce",
                      "calibrate-threshold", "plan", "report", "ps-count"])
    if cmd == "info":
        argv = ["info", name]
    elif cmd == "coarse":
        argv = ["predict", name, "--model", "coarse", "--workers", rng.choice(["1-4", "1,8,64"])]
    elif cmd == "fine":
        argv = ["predict", name, "--workers", "1,2", *TINY]
    elif cmd == "all":
        argv = ["predict", name, "--model", "all", "--workers", "1,2", *TINY, "--format",
                rng.choice(["json", "csv", "table"])]
    elif cmd == "sync":
        model = rng.choice(["fine", "coarse"])
        argv = ["predict", name, "--mode", "sync", "--model", model, "--workers", "2",
                *tiny_for(model)]
    elif cmd == "allreduce":
        model = rng.choice(["fine", "coarse", "all"])
        argv = ["predict", name, "--mode", "sync", "--arch", "allreduce", "--model", model,
                "--workers", "1,3", *tiny_for(model)]
    elif cmd == "ps-count":
        model = rng.choice(["fine", "coarse"])
        argv = ["predict", name, "--ps-count", rng.choice(["2", "3"]), "--model", model,
                "--workers", "2", *tiny_for(model)]
    elif cmd == "calibrate-threshold":
        return Case("profile", ["calibrate-threshold", "m.csv", name, "-q"],
                    {name: data, "m.csv": MEASURED.read_bytes()}, notes=notes)
    elif cmd == "plan":
        argv = ["plan", name, "--dataset-size", "1000", "--workers", "1-3", "--finalists", "1",
                "--jobs", "1"]
    else:
        argv = ["report", name, "--model", "coarse", "--workers", "1-3", "-o", "r.html"]
    return Case("profile", argv + ["-q"], {name: data}, notes=notes)


def gen_predict_case(rng: random.Random) -> Case:
    files = {"p.json": ALEXNET.read_bytes()}
    notes: list[str] = []
    existing: list[str] = []
    source = rng.random()
    if source < 0.75:
        argv = ["predict", "p.json"]
    elif source < 0.9:
        spec = rng.choice(["size=10MB,fwd=10ms,bwd=20ms,batch=32",
                           "fwd=182,bwd=261,size=10MB,batch=32",
                           "size=10MB,fwd=10ms,bwd=20ms,batch=32,fwd=5ms",
                           "size=0MB,fwd=0ms,bwd=0ms,batch=32",
                           "size=1e308B,fwd=10ms,bwd=20ms,batch=32",
                           "size=10MB,fwd=nanms,bwd=20ms,batch=32",
                           "size=10MB,fwd=infs,bwd=20ms,batch=32",
                           "size=10MB,fwd=10ms,bwd=20ms,batch=0",
                           "size=10MB,fwd=10ms,bwd=20ms,batch=" + BIG_INT,
                           "size=10MB,fwd=10ms,bwd=20ms,batch=1.5",
                           "size=10MB,fwd=10ms,bwd=20ms",
                           "size=10MB,fwd=10ms,bwd=20ms,batch=32,color=red",
                           "", ",", "=", "size", "size=5XB,fwd=1ms,bwd=1ms,batch=1",
                           "size=10MB,fwd=-10ms,bwd=20ms,batch=32",
                           "size=10MB,fwd=1e308s,bwd=1e308s,batch=32"])
        argv = ["predict", "--coarse", spec]
        if rng.random() < 0.2:
            argv.insert(1, "p.json")  # both a profile and --coarse
    else:
        k = rng.randint(1, 3)
        argv = ["predict"]
        for i in range(k):
            cls = rng.choice(["a", "b", "", "a=b", "c"])
            path = rng.choice(["p.json", "p.json", "missing.json", "p.json:3", ""])
            count = rng.choice(["1", "2", "0", "-1", "100000", BIG_INT, "x", "", "1.5", "nan"])
            argv += ["--worker-profile", f"{cls}={path}:{count}" if rng.random() < 0.9
                     else rng.choice(["a", "a=p.json", ":", "=:"])]
    opts = _pick_options(rng, PREDICT_OPTIONS, 6)
    # tiny defaults first (a drawn value of the same option overrides them), and only for the
    # models that run the simulator
    argv += ["--workers", "1,2", *tiny_for(_model_of(opts)), "-q", *opts]
    if rng.random() < 0.15:
        data, hnotes = hardware_text(rng)
        files["hw.json"] = data
        notes += hnotes
        argv += ["--hardware", "hw.json"]
    elif rng.random() < 0.03:
        argv += ["--hardware", rng.choice(["missing.json", "", "."])]
    if rng.random() < 0.15:
        existing.append("t.json")
        argv += ["--timeline", "t.json"]
    if rng.random() < 0.1:
        target = rng.choice(["r.html", "t.json"])
        if target not in existing:
            existing.append(target)
        argv += ["--report", target]
    if rng.random() < 0.08:
        argv += ["--timeline", rng.choice(["nodir/t.json", ".", ""])]
    if rng.random() < 0.08:
        argv.append("--force")
    return Case("predict", argv, files, existing, notes)


def gen_plan_case(rng: random.Random) -> Case:
    files = {"p.json": ALEXNET.read_bytes()}
    existing: list[str] = []
    if rng.random() < 0.8:
        argv = ["plan", "p.json"]
    else:
        argv = ["plan", "--coarse", rng.choice(["size=10MB,fwd=10ms,bwd=20ms,batch=32",
                                                "size=10MB,fwd=10,bwd=20ms,batch=32",
                                                "size=1e308B,fwd=1ms,bwd=1ms,batch=1"])]
    argv += ["--dataset-size", "1000", "--workers", "1-4", "--finalists", "1", "--jobs", "1",
             "-q"]
    argv += _pick_options(rng, PLAN_OPTIONS, 5)
    if rng.random() < 0.1:
        argv += ["--target-epoch-time", "1s", "--budget-per-epoch", "1"]  # exclusive
    if rng.random() < 0.1:
        data, notes = hardware_text(rng)
        files["hw.json"] = data
        argv += ["--hardware", "hw.json"]
    if rng.random() < 0.15:
        existing.append("plot.png")
        argv += ["--plot", "plot.png"]
        if rng.random() < 0.3:
            argv.append("--force")
    return Case("plan", argv, files, existing)


def gen_optimize_case(rng: random.Random) -> Case:
    files: dict[str, bytes] = {}
    model = rng.choice(OPTIMIZE_MODELS + ["layers.csv", "layers.csv"])
    if model == "layers.csv":
        kind = rng.choice(["good", "nonutf8", "truncate", "nan", "empty"])
        good = LAYERS.read_bytes()
        data = {"good": good, "nonutf8": good[:200] + b"\xff\xfe" + good[200:],
                "truncate": good[: rng.randrange(len(good))], "empty": b"",
                "nan": good.replace(b"0.", b"nan", 1)}[kind]
        files["layers.csv"] = data
    argv = ["optimize", model, "--machines", rng.choice(["2", "4"]), "--cores",
            rng.choice(["1", "2"]), "-q"]
    argv += _pick_options(rng, OPTIMIZE_OPTIONS, 4)
    if rng.random() < 0.1:
        files["c.json"], _ = hardware_text(rng)
        argv += ["--constants", "c.json"]
    if rng.random() < 0.08:
        data, _ = hardware_text(rng)
        files["hw.json"] = data
        argv += ["--hardware", "hw.json"]
    return Case("optimize", argv, files)


def gen_calibrate_threshold_case(rng: random.Random) -> Case:
    data, notes = csv_text(rng)
    argv = ["calibrate-threshold", "m.csv", "p.json", "-q"]
    if rng.random() < 0.6:
        argv += ["--bandwidth", rng.choice(BW_GOOD + BW_BAD)]
    if rng.random() < 0.05:
        argv[1] = rng.choice(["missing.csv", ".", ""])
    return Case("calibrate-threshold", argv, {"m.csv": data, "p.json": ALEXNET.read_bytes()},
                notes=notes)


def gen_calibrate_case(rng: random.Random) -> Case:
    hw, notes = hardware_text(rng)
    files = {"p.json": ALEXNET.read_bytes(), "hw.json": hw}
    existing: list[str] = []
    if rng.random() < 0.5:
        what = ["--step-time", rng.choice(["1.72s", "0.5s,0.6s", "0.4s", "1ms", "0s", "-1s",
                                           "nan", "infs", "1e308s", "", "1.72", "1.72s,,1s",
                                           "5XB"])]
    else:
        what = ["--throughput", rng.choice(["650", "600,610", "1e-300", "0", "-5", "nan",
                                            "inf", "1e308", "", "x", "650,"])]
    out = rng.choice(["hw-out.json", "hw-out.json", "existing.json", "nodir/x.json", ".",
                      "hw.json"])
    if out in ("existing.json", "hw.json"):
        existing.append(out)
    argv = ["calibrate", "p.json", *what, "--hardware", "hw.json", "-o", out, "-q"]
    if rng.random() < 0.3:
        argv += ["--arch", rng.choice(["ps", "allreduce"]), "--mode",
                 rng.choice(["async", "sync"])]
    if rng.random() < 0.2:
        argv.append("--force")
    return Case("calibrate", argv, files, existing, notes)


def gen_import_case(rng: random.Random) -> Case:
    data, notes = graph_text(rng)
    out = rng.choice(["out.json", "out.json.gz", "existing.json", "existing_dir", "nodir/o.json",
                      ".", ""])
    files = {"g.txt": data}
    existing = ["existing.json"] if out == "existing.json" else []
    argv = ["import", "pipedream", "g.txt", "--batch-size",
            rng.choice(["8", "256", "0", "-1", BIG_INT, "x", "", "1.5"]), "-o", out, "-q"]
    if rng.random() < 0.3:
        argv += ["--update-s-per-mb", rng.choice(["0", "0.001", "-1", "nan", "inf", "1e308", "x"])]
    if rng.random() < 0.2:
        argv += ["--model-name", rng.choice(["m", "", "nan", "x" * 5000, "\u00e9"])]
    if rng.random() < 0.2:
        argv.append(rng.choice(["--overlap", "--no-overlap"]))
    if rng.random() < 0.3:
        argv.append("--force")
    case = Case("import", argv, files, existing, notes)
    case.make_dir = out == "existing_dir"  # type: ignore[attr-defined]
    return case


def gen_report_case(rng: random.Random) -> Case:
    files = {"p.json": ALEXNET.read_bytes()}
    out = rng.choice(["r.html", "existing.html", "nodir/r.html", "."])
    existing = ["existing.html"] if out == "existing.html" else []
    model = rng.choice(["coarse", "lin", "fine", "all"])
    argv = ["report", "p.json", "--model", model, "--workers", "1,2", *tiny_for(model), "-o",
            out, "-q"]
    argv += _pick_options(rng, {k: v for k, v in PREDICT_OPTIONS.items()
                                if k not in ("--format",)}, 3)
    if rng.random() < 0.2:
        argv.append("--force")
    return Case("report", argv, files, existing)


def gen_guarded_case(rng: random.Random) -> Case:
    """netbench and validate, always with an input that fails before any measurement."""
    if rng.random() < 0.7:
        fail = rng.choice([["-o", "nodir/hw.json"], ["--fanout", "2"], ["--fanout-rounds", "0"],
                           ["--two-way-rounds", "0"], ["--add-to", "hw.json"],
                           ["-o", "existing.json"], ["--two-way"]])
        existing = ["existing.json"] if "existing.json" in fail else []
        extra: list[str] = []
        for opt, values in {"--sizes": ["1KB,64KB", "", "5XB", "1KiB-", "nan"],
                            "--repeats": ["0", "-1", "x", BIG_INT],
                            "--pings": ["0", "-1", "x"],
                            "--max-bytes": ["0", "5XB", "nan", ""],
                            "--max-seconds": ["0", "-1", "nan", "inf"],
                            "--port": ["0", "-1", "70000", "x"]}.items():
            if rng.random() < 0.2:
                extra += [opt, rng.choice(values)]
        # the guaranteed failure comes last so that a bad extra option is reported first or
        # this one is: netbench measures nothing either way
        return Case("netbench", ["netbench", "--local", *extra, *fail, "-q"],
                    existing=existing, timeout_s=10.0)
    grid = rng.choice(["missing.toml", "g.toml", "g.json"])
    files = {}
    if grid != "missing.toml":
        files[grid] = rng.choice([b"\xff\xfe\x00garbage[[[", b"[[[", b"{", b"= = ="])
    argv = ["validate", grid, "-q"]
    if rng.random() < 0.3:
        argv += ["--models", rng.choice(["bogus", "", "fine,fine"])]
    return Case("validate", argv, files, timeout_s=10.0)


GENERATORS = [  # (family, weight)
    ("profile", 30), ("predict", 28), ("plan", 8), ("optimize", 8), ("calibrate-threshold", 6),
    ("calibrate", 6), ("import", 6), ("report", 4), ("guarded", 4),
]


def generate(rng: random.Random, base: dict) -> Case:
    family = rng.choices([f for f, _ in GENERATORS], weights=[w for _, w in GENERATORS])[0]
    if family == "profile":
        return gen_profile_case(rng, base)
    return {"predict": gen_predict_case, "plan": gen_plan_case, "optimize": gen_optimize_case,
            "calibrate-threshold": gen_calibrate_threshold_case, "calibrate": gen_calibrate_case,
            "import": gen_import_case, "report": gen_report_case,
            "guarded": gen_guarded_case}[family](rng)

