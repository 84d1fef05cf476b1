"""Structure rules of ``src/sgdsim``, checked on the source itself (AST, no imports).

(a) no file over ``MAX_FILE_LINES`` lines; (b) no function or method over ``MAX_FUNC_LINES``
lines, from its ``def`` line to its last line (decorators not counted), except the pure data
tables of ``DATA_TABLES``; (c) no architecture, sharing or collective name compared as a
string literal (``==``, ``!=``, ``in``, ``not in``, ``case``) outside the registries that own
those names: what an architecture or a sharing model does is asked of its registry entry, so a
new one is one file, not a hunt through ``if arch == "ps"``.

Each rule's failure message lists every violation.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path


SRC = Path(__file__).resolve().parent.parent / "src" / "sgdsim"
MAX_FILE_LINES = 400
MAX_FUNC_LINES = 50

# "path relative to src/sgdsim::qualified name" -> why it may be long. Only functions whose
# body is one literal table (a docstring, then ``return`` of a dict/list/tuple/set built from
# constants) belong here: splitting a table only scatters it. test_data_tables_are_tables
# keeps the list honest. None is over the limit today.
DATA_TABLES: dict[str, str] = {}

# Names that select an architecture (arch/), a sharing model (sim/sharing/) or a collective
# (topology/collectives/): only their registries may test for them by name.
REGISTRY_NAMES = frozenset({"ps", "allreduce", "hybrid", "fcfs"})
REGISTRY_DIRS = (
    "arch/",
    "sim/sharing/",
    "topology/collectives/",
    "lab/",  # the lab's traffic code: "ps" there is a process role, not an architecture
)



def _sources():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), path.read_text(encoding="utf-8")


def file_lengths(sources, limit: int = MAX_FILE_LINES) -> list[str]:
    return [f"{rel}: {n} lines" for rel, text in sources
            if (n := len(text.splitlines())) > limit]


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_functions(sources, limit: int = MAX_FUNC_LINES, allowed=DATA_TABLES) -> list[str]:
    out = []
    for rel, text in sources:
        for name, node in _functions(ast.parse(text)):
            length = node.end_lineno - node.lineno + 1  # lineno is the def line, not a decorator
            if length > limit and f"{rel}::{name}" not in allowed:
                out.append(f"{rel}:{node.lineno} {name}: {length} lines")
    return out


def _names_in(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and node.value in REGISTRY_NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for elt in node.elts for n in _names_in(elt)]
    return []


_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _name_test(node: ast.AST) -> str | None:
    """The source of ``node`` if it compares a registry name as a literal, else None."""
    if isinstance(node, ast.Compare) and any(isinstance(op, _COMPARE_OPS) for op in node.ops):
        if any(_names_in(side) for side in (node.left, *node.comparators)):
            return ast.unparse(node)
    elif isinstance(node, ast.MatchValue) and _names_in(node.value):
        return f"case {ast.unparse(node)}"  # ``case "ps":`` is ``==`` by another name
    return None


def name_comparisons(sources, exempt=REGISTRY_DIRS) -> list[str]:
    out = []
    for rel, text in sources:
        if rel.startswith(exempt):
            continue
        found = [(node.lineno, shown) for node in ast.walk(ast.parse(text))
                 if (shown := _name_test(node)) is not None]
        out += [f"{rel}:{line}: {shown}" for line, shown in sorted(found, key=lambda f: f[0])]
    return out


def _report(what: str, violations: list[str]) -> str:
    return f"{len(violations)} {what}:\n  " + "\n  ".join(violations)


def test_no_file_is_over_the_line_limit():
    violations = file_lengths(_sources())
    assert not violations, _report(f"files over {MAX_FILE_LINES} lines", violations)


def test_no_function_is_over_the_line_limit():
    violations = long_functions(_sources())
    assert not violations, _report(f"functions over {MAX_FUNC_LINES} lines", violations)


def test_registry_names_are_compared_only_in_their_registries():
    violations = name_comparisons(_sources())
    assert not violations, _report("name comparisons outside the registries", violations)


# ----------------------------------------------------------------------------- the checkers

def _is_literal_table(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True  # -1.5
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal_table(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal_table(k) for k in node.keys) and \
            all(_is_literal_table(v) for v in node.values)
    return False


def test_data_tables_are_tables():
    """An allow-listed function is still there and still only returns a literal table."""
    found = {f"{rel}::{name}": node for rel, text in _sources()
             for name, node in _functions(ast.parse(text))}
    for key in DATA_TABLES:
        assert key in found, f"{key}: no such function (drop it from DATA_TABLES)"
        body = found[key].body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        assert len(body) == 1 and isinstance(body[0], ast.Return) and \
            _is_literal_table(body[0].value), f"{key} is not a pure data table"


def test_the_checkers_find_what_they_look_for():
    src = ("import functools\n"
           "class C:\n"
           "    @functools.cache\n"
           "    def m(self):\n" + "        x = 1\n" * 50 +
           "def f(arch, s):\n"
           "    if arch == 'ps' or s in ('fcfs', 'x') or (s, arch) != ('a', 'allreduce'):\n"
           "        return 'hybrid'\n"
           "    match s:\n"
           "        case 'hybrid':\n"
           "            pass\n")
    sources = [("mod.py", src), ("lab/ps.py", src)]
    assert file_lengths(sources, limit=len(src.splitlines()) - 1) == [
        f"mod.py: {len(src.splitlines())} lines", f"lab/ps.py: {len(src.splitlines())} lines"]
    assert long_functions(sources[:1], allowed={}) == ["mod.py:4 C.m: 51 lines"]
    assert long_functions(sources[:1], allowed={"mod.py::C.m": ""}) == []
    found = name_comparisons(sources)
    assert [v.split(": ", 1)[0] for v in found] == ["mod.py:56"] * 3 + ["mod.py:59"], found
    assert found[-1] == "mod.py:59: case 'hybrid'"
    assert "return 'hybrid'" not in "".join(found)  # a returned name is not a comparison


# Where the names may stand as plain strings besides their registries, and why: each is
# another vocabulary that happens to share the word, not a choice of plug-in.
NAME_LITERALS_ALLOWED = {
    "spec/registries.py": "the registries' defaults",
    "analytic/mva.py": "the MVA station disciplines (processor sharing, FCFS queues)",
    "analytic/sync.py": "the all-reduce phase of a coarse result (an output key)",
    "profile/model.py": "the profile format's resource of a server's update",
    "profile/parse.py": "the profile format's field naming an op's server",
    "profile/io.py": "the profile format's field naming an op's server",
    "validate/grid.py": "the grid format's example in the module docstring",
}


def test_registry_names_stand_as_strings_only_where_listed():
    """A grep for "ps", "allreduce", "hybrid", "fcfs" in src/sgdsim outside the registries
    finds only the listed other vocabularies."""
    pattern = re.compile(r"""["'](%s)["']""" % "|".join(sorted(REGISTRY_NAMES)))
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(REGISTRY_DIRS) or rel in NAME_LITERALS_ALLOWED:
            continue
        found += [f"{rel}:{i}: {line.strip()}" for i, line in enumerate(path.read_text().splitlines(), 1)
                  if pattern.search(line)]
    assert not found, _report("registry names as strings outside the registries", found)
