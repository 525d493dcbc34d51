#!/usr/bin/env python3
"""Checks the sizes docs/development.md ("Size") sets; exit 1 listing
each one over, longest first.

  scripts/check-sizes.py

- No Rust source file under src/ or linker-tests/ is over 800 lines.
- No function of the library's non-test code is over 100 lines, counted
  from the line of its `fn` to the line of the brace that closes its
  body. The library's code is what scripts/module-graph.py reads: the
  files src/lib.rs's declarations reach, with test code left out by its
  rule (`#[cfg(test)]` items, `tests` modules and the files they declare:
  src/X/tests.rs, src/X/tests/). A function inside another is counted
  on its own too (and as part of the outer one). FN_ALLOWED below names
  the few that stay longer, each with its reason.

A longer file is split along its seams into private submodules, the
module root re-exporting what its users name; a longer function into
named steps (issue #58)."""
import importlib.util
import sys
from pathlib import Path

LIMIT = 800
FN_LIMIT = 100
root = Path(__file__).resolve().parent.parent

# Functions allowed over FN_LIMIT lines: "path/from/src.rs::name" -> why.
FN_ALLOWED: dict[str, str] = {}


def file_sizes():
    over = []
    for top in ("src", "linker-tests"):
        for path in sorted((root / top).rglob("*.rs")):
            with open(path, "rb") as f:
                lines = sum(1 for _ in f)
            if lines > LIMIT:
                over.append((lines, path.relative_to(root)))
    if over:
        print(f"source files over {LIMIT} lines (split them along their seams):")
        for lines, path in sorted(over, reverse=True):
            print(f"  {lines:6} {path}")
        return 1
    print(f"sizes: no file under src/ or linker-tests/ is over {LIMIT} lines")
    return 0


def functions(graph, toks):
    """(name, first line, last line) of each function with a body in the
    tokens of one file, test code left out as module-graph.py leaves it."""
    out = []
    pending_test = False
    i = 0
    while i < len(toks):
        kind, t, line = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "punct" and t == "#" and nxt == "[":
            close = graph.matching(toks, i + 1)
            pending_test |= graph.test_only_cfg(toks[i + 2:close])
            i = close + 1
            continue
        if kind == "punct" and t == "#" and nxt == "!" and i + 2 < len(toks) and toks[i + 2][1] == "[":
            i = graph.matching(toks, i + 2) + 1
            continue
        if pending_test:
            pending_test = False
            i = graph.item_end(toks, i) + 1
            continue
        if kind == "id" and t == "mod" and nxt == "tests":
            i = graph.item_end(toks, i) + 1
            continue
        if kind == "id" and t == "fn" and i + 1 < len(toks) and toks[i + 1][0] == "id":
            j = i + 2
            while j < len(toks) and toks[j][1] not in ("{", ";"):
                if toks[j][0] == "punct" and toks[j][1] in ("(", "["):
                    j = graph.matching(toks, j)
                j += 1
            if j < len(toks) and toks[j][1] == "{":
                out.append((toks[i + 1][1], line, toks[graph.matching(toks, j)][2]))
        i += 1
    return out


def function_sizes():
    spec = importlib.util.spec_from_file_location("module_graph", root / "scripts" / "module-graph.py")
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    lib = graph.File(graph.src / "lib.rs", [], True)
    graph.parse(lib)
    every = [lib] + [f for fs in graph.library_files(lib).values() for f in fs]
    over, seen, count = [], set(), 0
    for f in sorted(every, key=lambda f: f.path):
        rel = f.path.relative_to(graph.src)
        for name, first, last in functions(graph, graph.tokens(f.path.read_text())):
            count += 1
            lines = last - first + 1
            if lines <= FN_LIMIT:
                continue
            key = f"{rel}::{name}"
            if key in FN_ALLOWED:
                seen.add(key)
                print(f"allowed: src/{rel}:{first} fn {name}, {lines} lines ({FN_ALLOWED[key]})")
                continue
            over.append((lines, f"src/{rel}:{first} fn {name}"))
    stale = sorted(set(FN_ALLOWED) - seen)
    for key in stale:
        print(f"FN_ALLOWED in scripts/check-sizes.py: {key} is no longer over {FN_LIMIT} lines "
              "(or gone): remove its entry")
    if over:
        print(f"functions over {FN_LIMIT} lines (split them into named steps):")
        for lines, where in sorted(over, reverse=True):
            print(f"  {lines:6} {where}")
    if over or stale:
        return 1
    print(f"sizes: no function of the library's non-test code ({count}) is over {FN_LIMIT} "
          f"lines but the {len(seen)} allowed in scripts/check-sizes.py")
    return 0


failed = file_sizes()
failed |= function_sizes()
sys.exit(failed)
