"""The import map of the tree: which module imports which, the floors that follows, circles,
imports pointing up, the longest functions and the widest bindings.

    python3 tools/import_map.py            # the summary
    python3 tools/import_map.py --edges    # every edge too

Rust: a module is a file of `src/` (`src/wire/anthropic.rs` is `wire::anthropic`; `mod.rs` is
its folder); an edge is a `crate::X` path outside `#[cfg(test)]` blocks. Python: a module of
`python/contextfold/`; an edge is an import of `contextfold.X` (relative imports resolved),
lazy imports inside functions included. A module's floor is 0 when it imports nothing of its
own tree, else one above the highest floor it imports; a circle is a strongly connected set.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- Rust


def rust_module(path: Path) -> str:
    rel = path.relative_to(ROOT / "src").with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts) or "crate"


def strip_tests(text: str) -> str:
    """The file without its `#[cfg(test)]` items (brace-matched)."""
    out, i = [], 0
    while True:
        j = text.find("#[cfg(test)]", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find("{", j)
        semi = text.find(";", j)
        if k < 0 or (0 <= semi < k):
            i = semi + 1
            continue
        depth = 0
        for n in range(k, len(text)):
            if text[n] == "{":
                depth += 1
            elif text[n] == "}":
                depth -= 1
                if depth == 0:
                    i = n + 1
                    break
        else:
            return "".join(out)


def rust_graph() -> dict[str, set[str]]:
    files = [p for p in (ROOT / "src").rglob("*.rs")]
    mods = {rust_module(p): p for p in files}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    # What each folder module re-exports from outside itself: `pub use crate::a::B` -> {B: a}.
    reexports: dict[str, dict[str, str]] = {}
    for m, p in mods.items():
        if p.name != "mod.rs":
            continue
        for path, names in re.findall(r"pub use crate::((?:[a-z_]+::)*)\{?([A-Za-z_, ]+)\}?;", p.read_text()):
            for name in names.split(","):
                if name.strip():
                    reexports.setdefault(m, {})[name.strip()] = path.rstrip(":")
    for m, p in mods.items():
        text = strip_tests(p.read_text())
        # Comments name modules without importing them.
        text = "\n".join(line.split("//")[0] for line in text.split("\n"))
        paths = set(re.findall(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text))
        # `use crate::{a, b::c}` groups
        for grp in re.findall(r"crate::\{([^}]*)\}", text):
            paths |= {g.strip().split("::")[0] for g in grp.split(",") if g.strip()}
        parent = m.rsplit("::", 1)[0] if "::" in m else ""
        if parent:
            # `super::x` is the parent folder's item `x`: a child module, or an item the folder
            # re-exports from elsewhere (`pub use crate::message::Format`), resolved to its origin.
            sups = set(re.findall(r"super::([A-Za-z_][A-Za-z0-9_]*)", text))
            for grp in re.findall(r"super::\{([^}]*)\}", text):
                sups |= {g.strip().split("::")[0] for g in grp.split(",") if g.strip()}
            for sup in sups:
                origin = reexports.get(parent, {}).get(sup)
                paths.add(origin if origin else f"{parent}::{sup}")
        if p.name == "mod.rs" or p.name == "lib.rs":
            # A folder's own code naming its children (`openai_chat::DIALECT`), beyond the `mod`
            # declarations and re-exports that assemble it.
            body = "\n".join(line for line in text.split("\n")
                             if not re.match(r"\s*(pub\s+)?(mod|use)\s", line))
            for child in re.findall(r"\b([a-z_][a-z0-9_]*)::", body):
                cand = f"{m}::{child}" if m != "crate" else child
                if cand in mods:
                    paths.add(cand)
        for path in paths:
            segs = path.split("::")
            # the longest prefix that is a module
            for n in range(len(segs), 0, -1):
                cand = "::".join(segs[:n])
                if cand in mods and cand != m:
                    graph[m].add(cand)
                    break
    # A folder module (`wire`) that only re-exports its children is not a floor of its own:
    # an edge to a child that the parent re-exports stays an edge to the parent.
    return graph


# ---------------------------------------------------------------- Python


def python_graph() -> dict[str, set[str]]:
    pkg = ROOT / "python" / "contextfold"
    mods: dict[str, Path] = {}
    for p in pkg.rglob("*.py"):
        rel = p.relative_to(pkg.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    mods["contextfold._core"] = pkg / "_core.pyi"
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        if p.suffix == ".pyi":
            continue
        is_pkg = p.name == "__init__.py"
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = m.split(".") if is_pkg else m.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for n in names:
                # the longest prefix that is a module of the package
                segs = n.split(".")
                for k in range(len(segs), 0, -1):
                    cand = ".".join(segs[:k])
                    if cand in mods and cand != m:
                        graph[m].add(cand)
                        break
    return graph


# ---------------------------------------------------------------- analysis


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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

    for v in graph:
        if v not in index:
            visit(v)
    return out


def floors(graph: dict[str, set[str]], ignore: set[tuple[str, str]] = frozenset()) -> dict[str, int]:
    """Each module's floor over the graph with its circles' edges left out."""
    memo: dict[str, int] = {}

    def floor(v: str, seen: frozenset[str]) -> int:
        if v in memo:
            return memo[v]
        deps = [w for w in graph[v] if (v, w) not in ignore and w not in seen]
        f = 0 if not deps else 1 + max(floor(w, seen | {v}) for w in deps)
        memo[v] = f
        return f

    return {v: floor(v, frozenset()) for v in graph}


def parent_child_reexports(graph: dict[str, set[str]], sep: str) -> set[tuple[str, str]]:
    """A folder module importing its own children (`wire` -> `wire::anthropic`) is how a
    package is assembled, not a floor: those edges are left out of circles and floors."""
    return {(a, b) for a in graph for b in graph[a] if b.startswith(a + sep)}


def longest_functions(top: int = 8) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for p in (ROOT / "python" / "contextfold").rglob("*.py"):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                out.append((n, f"{p.relative_to(ROOT)}:{node.lineno} {node.name}"))
    for p in (ROOT / "src").rglob("*.rs"):
        lines = p.read_text().split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"\s*(?:pub(?:\([a-z]+\))?\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+([a-z_0-9]+)", line)
            if not m:
                continue
            # the body: from the first `{` after the signature to its matching `}`
            depth, started, end = 0, False, None
            for j in range(i, len(lines)):
                for ch in lines[j]:
                    if ch == "{":
                        depth += 1
                        started = True
                    elif ch == "}":
                        depth -= 1
                if started and depth == 0:
                    end = j
                    break
                if not started and lines[j].rstrip().endswith(";"):
                    break
            if end is not None:
                out.append((end - i + 1, f"{p.relative_to(ROOT)}:{i + 1} {m.group(1)}"))
    return sorted(out, reverse=True)[:top]


def widest_bindings(top: int = 5) -> list[tuple[int, str]]:
    """PyO3 functions and methods by their number of Python-visible parameters."""
    out = []
    for p in (ROOT / "src" / "python").rglob("*.rs"):
        text = p.read_text()
        for m in re.finditer(r"#\[pyo3\(signature = \((.*?)\)\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?fn\s+([a-z_0-9]+)", text, re.S):
            params = [x for x in re.split(r",\s*", m.group(1).strip()) if x and x not in ("/", "*")]
            out.append((len(params), f"{p.relative_to(ROOT)} {m.group(2)}"))
    return sorted(out, reverse=True)[:top]


def report(name: str, graph: dict[str, set[str]], sep: str, edges: bool) -> None:
    # Rust edges from a folder to its children are real uses (declarations are not read);
    # a Python package's `__init__` importing its children is how it is assembled.
    skip = parent_child_reexports(graph, sep) if sep == "." else set()
    g = {v: {w for w in ws if (v, w) not in skip} for v, ws in graph.items()}
    circles = sccs(g)
    in_circle = {(a, b) for c in circles for a in c for b in g[a] if b in c}
    fl = floors(g, in_circle)
    print(f"{name}: {len(graph)} modules, {max(fl.values()) + 1} floors, {len(circles)} circles")
    for c in circles:
        print("  circle:", " <-> ".join(c))
    by_floor: dict[int, list[str]] = defaultdict(list)
    for v, f in fl.items():
        by_floor[f].append(v)
    for f in sorted(by_floor):
        print(f"  floor {f}: {', '.join(sorted(by_floor[f]))}")
    if edges:
        for v in sorted(g):
            print(f"  {v} -> {', '.join(sorted(g[v]))}")


def main() -> None:
    edges = "--edges" in sys.argv
    report("Rust core (src/)", rust_graph(), "::", edges)
    report("Python (python/contextfold/)", python_graph(), ".", edges)
    print("longest functions (lines):")
    for n, where in longest_functions():
        print(f"  {n:>4}  {where}")
    print("widest bindings (Python-visible parameters):")
    for n, where in widest_bindings():
        print(f"  {n:>4}  {where}")


if __name__ == "__main__":
    main()
