"""``sgdsim validate``: measured vs predicted throughput over a grid of lab cases.

- ``grid``: ``load_grid(path)`` -> ``Grid`` of ``Case``s (TOML or JSON; docs/validation/README.md);
- ``run``: ``run_validation(grid, outdir, ...)`` with injectable profiling, lab and measuring;
- ``report``: points.csv, summary.md/.json; ``plot``: one PNG per case;
- ``resume``: what a stopped run keeps (``PointFailed``) and ``--resume``, which continues it;
- ``cli``: ``register(subparsers)`` adds the ``validate`` command.

Nothing here imports torch, matplotlib or the lab until a run needs them.
"""
from .grid import Case, Grid, load_grid, parse_grid  # noqa: F401
from .run import (CaseResult, Point, ValidationResult, parse_models, predict_case,  # noqa: F401
                  run_validation)
from .resume import PointFailed  # noqa: F401
