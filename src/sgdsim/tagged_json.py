"""Reading a small JSON file tagged with ``"format"``: one line per problem, the file named."""
from __future__ import annotations

import json

from .errors import SgdsimError


def read_tagged(path, fmt: str, what: str, error: type[SgdsimError]) -> dict:
    """The object in ``path`` whose ``"format"`` is ``fmt``; ``what`` names the file in errors."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise error(f"{what} {path}: cannot read file ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise error(f"{what} {path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise error(f"{what} {path}: expected an object with \"format\": \"{fmt}\"")
    return data
