"""Reading the small JSON files users hand us: one line per problem, the file named.

``json`` raises RecursionError on deeply nested input (``[[[[...``) and UnicodeDecodeError on
binary files, ValueError on integers of thousands of digits; all are a malformed file, not a bug, so they are reported like a syntax error.
"""
from __future__ import annotations

import json
from typing import Any

from .errors import SgdsimError


def parse_json(text: str, what: str, error: type[SgdsimError]) -> Any:
    """``text`` as JSON; ``what`` ("profile x.json") names it in errors."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{what}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise error(f"{what}: not valid JSON (nested too deeply)") from None
    except ValueError as e:  # an integer of more than 4300 digits
        raise error(f"{what}: not valid JSON ({e})") from None


def read_json(path, what: str, error: type[SgdsimError]) -> Any:
    """The JSON value in the file ``path``; ``what`` ("hardware file") names it in errors."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise error(f"{what} {path}: cannot read file ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8-sig")  # tolerate a BOM from Windows editors
    except UnicodeDecodeError:
        raise error(f"{what} {path}: not UTF-8 text") from None
    return parse_json(text, f"{what} {path}", error)


def read_tagged(path, fmt: str, what: str, error: type[SgdsimError]) -> dict:
    """The object in ``path`` whose ``"format"`` is ``fmt``; ``what`` names the file in errors."""
    data = read_json(path, what, error)
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise error(f"{what} {path}: expected an object with \"format\": \"{fmt}\"")
    return data
