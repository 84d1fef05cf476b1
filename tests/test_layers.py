"""The layers hold, by a tool, and no module of sgdsim imports itself through others."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import grimp
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_planted_cycle():
    class Graph:
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges.get(m, set())

    assert cycles(Graph()) == [["a", "b", "c"]]


def test_no_import_cycles():
    found = cycles(grimp.build_graph("sgdsim"))
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


@pytest.mark.skipif(shutil.which("lint-imports") is None and not os.path.exists(
    os.path.join(os.path.dirname(sys.executable), "lint-imports")), reason="import-linter not installed")
def test_layer_contracts_kept():
    exe = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    out = subprocess.run([exe if os.path.exists(exe) else "lint-imports"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0 and "0 broken" in out.stdout, out.stdout[-2000:]
