"""Every relative link in the project's Markdown resolves: to a file that exists and, with an
anchor, to a heading of that file (GitHub's slugs). A user's clone has only what is linked."""
from __future__ import annotations

import os
import re
from functools import lru_cache

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {".venv", "build", "dist", ".git", ".pytest_cache", ".hypothesis", "node_modules"}
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```", re.S)


def markdown_files() -> list[str]:
    out = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in SKIP and not x.endswith(".egg-info")]
        out += [os.path.join(d, f) for f in files if f.endswith(".md")]
    return sorted(out)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@lru_cache(maxsize=None)  # a contents list links one file dozens of times
def anchors(path: str) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in CODE.sub("", open(path, encoding="utf-8").read()).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return frozenset(out)


def links(path: str) -> list[str]:
    text = CODE.sub("", open(path, encoding="utf-8").read())
    return [t for t in LINK.findall(text) if not t.startswith(("http://", "https://", "mailto:"))]


@pytest.mark.parametrize("md", markdown_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_resolve(md):
    broken = []
    for target in links(md):
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.exists(full):
            broken.append(target)
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            broken.append(target)
    assert not broken, f"{os.path.relpath(md, ROOT)}: {broken}"


def test_the_slug_rule_on_known_headings():
    assert slug("Run 35: the per-type rule on an AMD EPYC at today's code (planned 2026-12-06)") == \
        "run-35-the-per-type-rule-on-an-amd-epyc-at-todays-code-planned-2026-12-06"
    assert slug("Not done") == "not-done"
    assert slug("`sgdsim plan` and `join_delay`") == "sgdsim-plan-and-join_delay"
