"""The package layers import one way (problems ← agon_env ← baselines ← benchmarks) and no module
imports itself back through others, counting imports inside functions and TYPE_CHECKING blocks."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("problems", "agon_env", "baselines", "benchmarks")


def module_names(root: Path, packages=LAYERS) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its file."""
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports the submodule; `from pkg import name` the package itself
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # `import a.b.c` of a non-module attribute: its module
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph(root: Path = ROOT, packages=LAYERS) -> dict[str, set[str]]:
    known = module_names(root, packages)
    return {m: imports(m, p, known) for m, p in known.items()}


def layer_violations(g: dict[str, set[str]], layers=LAYERS) -> list[str]:
    rank = {pkg: i for i, pkg in enumerate(layers)}
    return [f"{m} imports {t}" for m, ts in g.items() for t in ts if rank[t.split(".")[0]] > rank[m.split(".")[0]]]


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
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

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_layers_import_one_way():
    assert layer_violations(graph()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_the_checks_catch_a_cycle_and_a_backward_import(tmp_path):
    for pkg, files in {"problems": {"__init__.py": "", "a.py": "from .b import x\n", "b.py": "def f():\n    from . import a\n"},
                       "agon_env": {"__init__.py": "from baselines.x import y\n"},
                       "baselines": {"__init__.py": "", "x.py": "y = 1\n"}, "benchmarks": {"__init__.py": ""}}.items():
        (tmp_path / pkg).mkdir()
        for f, text in files.items():
            (tmp_path / pkg / f).write_text(text)
    g = graph(tmp_path)
    assert cycles(g) == [["problems.a", "problems.b"]]  # the lazy import inside f() counts
    assert layer_violations(g) == ["agon_env imports baselines.x"]
