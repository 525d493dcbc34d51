#!/usr/bin/env python3
"""Checks the sizes docs/development.md ("Size") sets; exit 1 listing
each one over, longest first.

  scripts/check-sizes.py

- No Rust source file under src/ or linker-tests/ is over 800 lines, nor
  any script under scripts/ (`.py`, `.sh`, `.rs`; build outputs, fuzz
  corpora and caches left out).
- No function of the library's non-test code is over 100 lines, counted
  from the line of its `fn` to the line of the brace that closes its
  body. The library's code is what scripts/module-graph.py reads: the
  files src/lib.rs's declarations reach, with test code left out by its
  rule (`#[cfg(test)]` items, `tests` modules and the files they declare:
  src/X/tests.rs, src/X/tests/). A function inside another is counted
  on its own too (and as part of the outer one). FN_ALLOWED below names
  the few that stay longer, each with its reason.
- src/cli/ has at most CLI_LIMIT (6,000) lines outside test code.
- No function of a script under scripts/ is over 100 lines either: a
  Python `def`, from its line to its body's last line (by indentation),
  and a shell function, from `name() {` to the `}` at its indentation
  (here-documents skipped). SCRIPT_FN_ALLOWED names those that stay
  longer, each with its reason.

A longer file is split along its seams into private submodules, the
module root re-exporting what its users name; a longer function into
named steps (issue #58)."""
import importlib.util
import re
import sys
from pathlib import Path

LIMIT = 800
FN_LIMIT = 100
root = Path(__file__).resolve().parent.parent

# Functions allowed over FN_LIMIT lines: "path/from/src.rs::name" -> why.
FN_ALLOWED: dict[str, str] = {}
# Scripts' functions allowed over FN_LIMIT lines: "scripts/path::name" -> why.
WHOLE_GROUP = ("one bench group's rows in table order, left whole when bench.sh was split "
               "by group (issue #72): the whole bench could not be run to check a split")
SCRIPT_FN_ALLOWED: dict[str, str] = {
    "scripts/bench/bundler.sh::step_bundler": WHOLE_GROUP,
    "scripts/bench/wrapper.sh::step_wrapper": WHOLE_GROUP,
    "scripts/bench/real_libs.sh::step_real_libs": WHOLE_GROUP,
}
SCRIPT_SUFFIXES = (".py", ".sh", ".rs")
# Folders under scripts/ that hold no scripts: build outputs, fuzz inputs, caches.
NOT_SCRIPTS = {"target", "corpus", "artifacts", "__pycache__"}


def scripts():
    """The scripts under scripts/, sorted."""
    return [p for p in sorted((root / "scripts").rglob("*"))
            if p.suffix in SCRIPT_SUFFIXES and p.is_file()
            and not NOT_SCRIPTS & set(p.relative_to(root).parts)]


def file_sizes():
    over = []
    paths = [p for top in ("src", "linker-tests") for p in sorted((root / top).rglob("*.rs"))]
    for path in paths + scripts():
        with open(path, "rb") as f:
            lines = sum(1 for _ in f)
        if lines > LIMIT:
            over.append((lines, path.relative_to(root)))
    if over:
        print(f"source files over {LIMIT} lines (split them along their seams):")
        for lines, path in sorted(over, reverse=True):
            print(f"  {lines:6} {path}")
        return 1
    print(f"sizes: no file under src/, linker-tests/ or scripts/ is over {LIMIT} lines")
    return 0


def python_functions(lines):
    """(name, first line, last line) of each `def`: its body is every line
    after it indented deeper, blank lines and comments aside."""
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"(\s*)(?:async\s+)?def\s+(\w+)", line)
        if not m:
            continue
        indent, last = len(m.group(1)), i
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            if len(text) - len(text.lstrip()) <= indent:
                break
            last = j
        out.append((m.group(2), i + 1, last + 1))
    return out


def shell_functions(lines):
    """(name, first line, last line) of each shell function written
    `name() {` on a line of its own, ending at the `}` that stands at its
    indentation; the lines of here-documents are skipped."""
    out, open_fns, heredoc = [], [], None
    for i, line in enumerate(lines):
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        m = re.match(r"(\s*)(?:function\s+)?([A-Za-z_][\w:-]*)\s*\(\)\s*\{\s*(#.*)?$", line)
        if m:
            open_fns.append((m.group(1) + "}", m.group(2), i + 1))
        elif open_fns and line.rstrip() == open_fns[-1][0]:
            _, name, first = open_fns.pop()
            out.append((name, first, i + 1))
        # `<<WORD`, `<<-'WORD'`; not `<<<` nor a shift (`$((n << 20))`).
        h = re.search(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_]\w*)\1", line)
        if h and not line.lstrip().startswith("#"):
            heredoc = h.group(2)
    return out


def script_function_sizes():
    """The scripts' functions over FN_LIMIT lines, SCRIPT_FN_ALLOWED aside."""
    found_all = []
    for path in scripts():
        rel = path.relative_to(root)
        lines = path.read_text().split("\n")
        found = {".py": python_functions, ".sh": shell_functions}.get(path.suffix)
        for name, first, last in found(lines) if found else []:
            found_all.append((f"{rel}::{name}", f"{rel}:{first} {name}", last - first + 1))
    return judge(found_all, SCRIPT_FN_ALLOWED, "SCRIPT_FN_ALLOWED", "script functions",
                 "function of the scripts")


def judge(found, allowed, allowed_name, what, counted):
    """Exit status of the function-size rule over `found`, each a (key in
    `allowed`, where to print, lines): 1 naming each function over FN_LIMIT
    that `allowed` does not list and each entry of it no longer over."""
    over, seen = [], set()
    for key, where, size in found:
        if size <= FN_LIMIT:
            continue
        if key in allowed:
            seen.add(key)
            print(f"allowed: {where}, {size} lines ({allowed[key]})")
            continue
        over.append((size, where))
    stale = sorted(set(allowed) - seen)
    for key in stale:
        print(f"{allowed_name} in scripts/check-sizes.py: {key} is no longer over {FN_LIMIT} "
              "lines (or gone): remove its entry")
    if over:
        print(f"{what} over {FN_LIMIT} lines (split them into named steps):")
        for size, where in sorted(over, reverse=True):
            print(f"  {size:6} {where}")
    if over or stale:
        return 1
    print(f"sizes: no {counted} ({len(found)}) is over {FN_LIMIT} lines but the "
          f"{len(seen)} allowed in scripts/check-sizes.py")
    return 0


def outside_tests(graph, toks, spans=None):
    """The index of each token of one file outside test code, as
    module-graph.py leaves test code out (items under `#[cfg(test)]`, and
    `mod tests`); attributes are passed over. Each test item's first and
    last line go into `spans` when one is given."""
    pending_test = None
    i = 0
    while i < len(toks):
        kind, t, line = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "punct" and t == "#" and nxt == "[":
            close = graph.matching(toks, i + 1)
            if graph.test_only_cfg(toks[i + 2:close]) and pending_test is None:
                pending_test = line
            i = close + 1
            continue
        if kind == "punct" and t == "#" and nxt == "!" and i + 2 < len(toks) and toks[i + 2][1] == "[":
            i = graph.matching(toks, i + 2) + 1
            continue
        if pending_test is not None or (kind == "id" and t == "mod" and nxt == "tests"):
            end = graph.item_end(toks, i)
            if spans is not None:
                spans.append((line if pending_test is None else pending_test, toks[end][2]))
            pending_test = None
            i = end + 1
            continue
        yield i
        i += 1


def functions(graph, toks):
    """(name, first line, last line) of each function with a body in the
    tokens of one file, test code left out as module-graph.py leaves it."""
    out = []
    for i in outside_tests(graph, toks):
        kind, t, line = toks[i]
        if kind == "id" and t == "fn" and i + 1 < len(toks) and toks[i + 1][0] == "id":
            j = i + 2
            while j < len(toks) and toks[j][1] not in ("{", ";"):
                if toks[j][0] == "punct" and toks[j][1] in ("(", "["):
                    j = graph.matching(toks, j)
                j += 1
            if j < len(toks) and toks[j][1] == "{":
                out.append((toks[i + 1][1], line, toks[graph.matching(toks, j)][2]))
    return out


def function_sizes():
    spec = importlib.util.spec_from_file_location("module_graph", root / "scripts" / "module-graph.py")
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    lib = graph.File(graph.src / "lib.rs", [], True)
    graph.parse(lib)
    every = [lib] + [f for fs in graph.library_files(lib).values() for f in fs]
    found = []
    for f in sorted(every, key=lambda f: f.path):
        rel = f.path.relative_to(graph.src)
        for name, first, last in functions(graph, graph.tokens(f.path.read_text())):
            found.append((f"{rel}::{name}", f"src/{rel}:{first} fn {name}", last - first + 1))
    return judge(found, FN_ALLOWED, "FN_ALLOWED", "functions",
                 "function of the library's non-test code")

# The most lines the command line (src/cli/) may have outside test code
# (issue #72: the CLI only parses and prints; the jobs live below it).
CLI_LIMIT = 6000


def test_lines(graph, toks):
    """The number of lines the test items of one file's tokens span."""
    spans = []
    for _ in outside_tests(graph, toks, spans):
        pass
    return sum(last - first + 1 for first, last in spans)


def cli_size():
    """Fails when src/cli/'s files have more than CLI_LIMIT lines outside
    test code (files only tests reach are not the library's: left out)."""
    spec = importlib.util.spec_from_file_location("module_graph", root / "scripts" / "module-graph.py")
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    lib = graph.File(graph.src / "lib.rs", [], True)
    graph.parse(lib)
    every = [f for fs in graph.library_files(lib).values() for f in fs]
    total = 0
    for f in every:
        if f.path.relative_to(graph.src).parts[0] != "cli":
            continue
        text = f.path.read_text()
        total += len(text.splitlines()) - test_lines(graph, graph.tokens(text))
    if total > CLI_LIMIT:
        print(f"sizes: src/cli/ has {total} lines outside test code, over {CLI_LIMIT}")
        return 1
    print(f"sizes: src/cli/ has {total} lines outside test code (at most {CLI_LIMIT})")
    return 0


failed = file_sizes()
failed |= function_sizes()
failed |= cli_size()
failed |= script_function_sizes()
sys.exit(failed)
