"""How the scripts beside this one end on bad input, as the CLI does: one line, exit code 2."""
from __future__ import annotations

import os
import sys

from sgdsim.errors import SgdsimError


def run_main(entry, arguments: str = "", at_least: int = 0) -> None:
    """``entry()``; with fewer than ``at_least`` arguments a usage line (``arguments``) instead,
    and a database that is not there (or any sgdsim error) one line, both with exit code 2."""
    script = os.path.basename(sys.argv[0])
    if len(sys.argv) - 1 < at_least:
        print(f"usage: python examples/ops/{script} {arguments}", file=sys.stderr)
        sys.exit(2)
    try:
        entry()
    except SgdsimError as exc:
        print(f"{script}: error: {exc}", file=sys.stderr)
        sys.exit(2)
