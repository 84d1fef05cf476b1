#!/usr/bin/env python3
"""Seeded black-box fuzzer of the ``sgdsim`` command line.

Generates ``--n`` inputs from a seed (mutated and truncated profiles, hardware files, CSVs and
PipeDream graphs; option values of predict, plan, optimize, report, calibrate,
calibrate-threshold, import, netbench and validate; option combinations; output paths that
already exist), runs each as ``python -m sgdsim.cli ...`` in a fresh temporary folder, one at a
time, and checks the contract of the CLI:

* exit 0, or exit 2 with exactly one stderr line starting with ``sgdsim: error:``;
* never a traceback, never a hang (``--timeout-s``);
* no ``nan``/``inf`` in the output of a successful run;
* an existing output file is never changed without ``--force``.

Every case is classified as ``traceback``, ``hang``, ``nan_row``, ``multi_line_error``,
``bad_exit``, ``overwrite`` or ``ok``; a summary table is printed and every failing case
(argv, exit code, stderr tail, input files) goes to the ``--out`` JSON report.

Usage::

    python tools/fuzz_cli.py --seed 1 --n 775 --out report.json

Valid simulations are kept cheap (at most a few workers, 2 steps, 1 replication, --jobs 1)
so that 775 cases take well under 15 minutes on 2 cores. netbench and validate are only
given inputs that fail before any measurement starts (a guaranteed bad option); lab and
profile are never run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fuzz.cases import Case, generate
from fuzz.inputs import (ALEXNET, CLASSES, HANG_CAP, NONFINITE, PRECIOUS, QUICK_TIMEOUT_S, ROOT)



# ----------------------------------------------------------------------------- running

def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    except OSError:
        return None


def run_case(case: Case, workdir: Path, timeout_s: float) -> dict:
    for name, data in case.files.items():
        (workdir / name).write_bytes(data)
    for name in case.existing:
        (workdir / name).write_text(PRECIOUS)
    if getattr(case, "make_dir", False):
        (workdir / "existing_dir").mkdir(exist_ok=True)
    before = {name: _digest(workdir / name) for name in case.existing}
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONWARNINGS", None)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "sgdsim.cli", *case.argv], cwd=workdir,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    hung = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        hung = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this case started (pool workers too)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    elapsed = time.monotonic() - started
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    rc = proc.returncode
    changed = [n for n in case.existing if _digest(workdir / n) != before[n]]
    forced = "--force" in case.argv
    if hung:
        verdict = "hang"
    elif "Traceback" in stderr:
        verdict = "traceback"
    elif rc not in (0, 2):
        verdict = "bad_exit"
    elif rc == 2 and (len(stderr.splitlines()) != 1
                      or not stderr.startswith("sgdsim: error:")):
        verdict = "multi_line_error"
    elif rc == 0 and NONFINITE.search(stdout):
        verdict = "nan_row"
    elif changed and not forced:
        verdict = "overwrite"
    else:
        verdict = "ok"
    return {"verdict": verdict, "rc": rc, "elapsed_s": round(elapsed, 2), "stdout": stdout,
            "stderr": stderr, "changed": changed}


def _signature(result: dict, case: Case) -> str:
    """What a failure is, for grouping: the exception line of a traceback and the innermost
    sgdsim frame, else the first stderr line with numbers blanked."""
    err = result["stderr"]
    if result["verdict"] == "traceback":
        lines = [ln for ln in err.splitlines() if ln.strip()]
        exc = lines[-1] if lines else ""
        frames = re.findall(r'File "([^"]*sgdsim[^"]*)", line \d+, in (\w+)', err)
        where = f"{Path(frames[-1][0]).name}:{frames[-1][1]}" if frames else "?"
        return f"traceback {where}: {re.sub(r'[0-9.]+', 'N', exc)[:150]}"
    if result["verdict"] == "nan_row":
        m = NONFINITE.search(result["stdout"])
        return f"nan_row {case.argv[0]} {m.group(0) if m else ''}"
    if result["verdict"] in ("multi_line_error", "bad_exit"):
        first = err.splitlines()[0] if err.strip() else "(empty stderr)"
        return f"{result['verdict']} rc={result['rc']} {re.sub(r'[0-9.]+', 'N', first)[:150]}"
    return f"{result['verdict']} {case.argv[0]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    ap.add_argument("--n", type=int, default=775, help="number of inputs")
    ap.add_argument("--timeout-s", type=float, default=60.0,
                    help="a case still running after this is a hang")
    ap.add_argument("--out", default="report.json", help="JSON report of the failing cases")
    ap.add_argument("--keep", action="store_true", help="keep the case folders")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    base = json.loads(ALEXNET.read_text())
    counts: Counter = Counter()
    by_family: dict[str, Counter] = {}
    hangs: Counter = Counter()
    failures = []
    root = Path(tempfile.mkdtemp(prefix="sgdsim-fuzz-"))
    partial = Path(args.out + ".partial")
    t0 = time.monotonic()
    try:
        for i in range(args.n):
            case = generate(rng, base)
            workdir = root / f"case{i:05d}"
            workdir.mkdir()
            timeout = case.timeout_s or args.timeout_s
            if hangs[case.family] >= HANG_CAP:
                timeout = min(timeout, QUICK_TIMEOUT_S)
            result = run_case(case, workdir, timeout)
            verdict = result["verdict"]
            counts[verdict] += 1
            by_family.setdefault(case.family, Counter())[verdict] += 1
            if verdict == "hang":
                hangs[case.family] += 1
            if verdict != "ok":
                failures.append({
                    "index": i, "family": case.family, "verdict": verdict,
                    "signature": _signature(result, case), "argv": case.argv,
                    "rc": result["rc"], "elapsed_s": result["elapsed_s"],
                    "timeout_s": timeout, "notes": case.notes,
                    "input_files": {k: (v[:300].decode("utf-8", "replace")
                                        + (f"... ({len(v)} bytes)" if len(v) > 300 else ""))
                                    for k, v in case.files.items()},
                    "stderr_tail": "\n".join(result["stderr"].splitlines()[-12:]),
                    "stdout_head": result["stdout"][:500], "changed": result["changed"]})
                partial.write_text(json.dumps(failures, indent=1))  # readable while running
            if args.verbose or verdict != "ok":
                print(f"[{i + 1}/{args.n} {time.monotonic() - t0:6.0f}s] {verdict:16s} "
                      f"rc={result['rc']} {result['elapsed_s']:5.1f}s {' '.join(case.argv)[:160]}",
                      file=sys.stderr, flush=True)
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    elapsed = time.monotonic() - t0

    print(f"\nsgdsim CLI fuzz: seed {args.seed}, {args.n} cases, {elapsed:.0f} s")
    families = sorted(by_family)
    header = f"{'verdict':18s}{'total':>7s}" + "".join(f"{f[:10]:>11s}" for f in families)
    print(header)
    for v in CLASSES:
        print(f"{v:18s}{counts[v]:7d}" + "".join(f"{by_family[f][v]:11d}" for f in families))
    sigs = Counter(f["signature"] for f in failures)
    if sigs:
        print("\ndistinct failures (by signature):")
        for sig, n in sigs.most_common():
            print(f"  {n:4d}  {sig}")
    report = {"seed": args.seed, "n": args.n, "timeout_s": args.timeout_s,
              "elapsed_s": round(elapsed, 1), "counts": {v: counts[v] for v in CLASSES},
              "by_family": {f: dict(c) for f, c in by_family.items()},
              "signatures": dict(sigs.most_common()), "failures": failures}
    Path(args.out).write_text(json.dumps(report, indent=1))
    partial.unlink(missing_ok=True)
    print(f"\nwrote {args.out}: {len(failures)} failing case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
