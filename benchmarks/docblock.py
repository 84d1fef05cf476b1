"""Write a benchmark's table into a Markdown file between ``<!-- NAME -->`` markers."""
from __future__ import annotations

import re


def write_block(path: str, name: str, text: str) -> None:
    """Replace what lies between ``<!-- name -->`` and ``<!-- /name -->`` in ``path``."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    doc, n = re.subn(rf"(<!-- {name} -->\n).*?(\n<!-- /{name} -->)",
                     lambda m: m.group(1) + text + m.group(2), doc, flags=re.S)
    if n != 1:
        raise SystemExit(f"{path}: no <!-- {name} --> ... <!-- /{name} --> block")
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)


def publish(path: str, name: str, text: str) -> None:
    """Print a benchmark's table; with ``--write`` on the command line also put it into the doc."""
    import sys

    print(text)
    if "--write" in sys.argv:
        write_block(path, name, text)


def machine() -> str:
    """The line a benchmark table ends with: Python, architecture, cores and CPU model."""
    import os
    import platform

    from sgdsim.profiler.api import cpu_model

    return f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, {cpu_model()}"
