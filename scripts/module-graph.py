#!/usr/bin/env python3
"""The import graph between the crate's top-level modules, and a check that
it has no circles and that the library never imports the command line.

  scripts/module-graph.py      # the graph; exit 1 on a circle or a cli import

A top-level module is one `mod X;` of src/lib.rs: the file src/X.rs or
src/X/mod.rs and every file under it that its declarations reach (`cli` is
src/cli/; src/main.rs only calls `offload_kit::run_cli` and is left out).
An edge X -> Y is a path in X's code that names Y: `crate::Y…`,
`$crate::Y…`, `use crate::{Y, …}` (each name of the group), and `super::`
chains that climb to the crate root and go on into Y. `crate::Name` for a
name that src/lib.rs re-exports (`pub use error::{Error, …}`) counts as the
module it comes from.

Test code is left out, by one rule: an item under `#[cfg(test)]` (or
`#[cfg(all(test, …))]`), and a module named `tests`, is test code, with
everything inside it; a file is test code when the declaration that reaches
it is (so src/X/tests.rs and src/X/tests/ are, being declared as
`#[cfg(test)] mod tests;`). Code under `#[cfg(any(test, fuzzing))]` is
not test code: the fuzz targets build it. Comments, string and character
literals are skipped.

It prints one line per module, "X -> Y, Z" (sorted), and fails (exit 1)
naming every circle (strongly connected component of more than one module,
each pair A <-> B in it with the lines that make both edges) and every
library line that imports `cli`. Without circles it prints the layers: a
module's layer is one more than the highest layer it imports, so a module
may call only modules of lower layers."""
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
src = root / "src"
CLI = "cli"

PUNCT3 = {"..=", "...", "<<=", ">>="}
PUNCT2 = {"::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=",
          "%=", "^=", "&=", "|=", "<<", ">>", ".."}


def tokens(text):
    """Rust tokens as (kind, text, line): kind is "id", "punct", "lit" or
    "life"; comments are dropped, literals kept as one opaque token."""
    out = []
    i, n, line = 0, len(text), 1

    def skip_string(j, raw_hashes=None):
        # j is just past the opening quote; returns the index past the close.
        nonlocal line
        while j < n:
            c = text[j]
            if c == "\n":
                line += 1
            if raw_hashes is not None:
                if c == '"' and text[j + 1:j + 1 + raw_hashes] == "#" * raw_hashes:
                    return j + 1 + raw_hashes
            elif c == "\\":
                if j + 1 < n and text[j + 1] == "\n":
                    line += 1
                j += 2
                continue
            elif c == '"':
                return j + 1
            j += 1
        return j

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    line += text[j] == "\n"
                    j += 1
            i = j
        elif c == '"':
            start = line
            i = skip_string(i + 1)
            out.append(("lit", '""', start))
        elif c in "rbc" and (m := _raw_prefix(text, i)) is not None:
            hashes, body = m
            start = line
            i = skip_string(body, hashes)
            out.append(("lit", '""', start))
        elif c == "b" and text.startswith("b'", i):
            i = _skip_char(text, i + 1)
            out.append(("lit", "''", line))
        elif c == "'":
            if i + 1 < n and text[i + 1] == "\\":
                i = _skip_char(text, i)
                out.append(("lit", "''", line))
            elif i + 2 < n and text[i + 2] == "'":
                i += 3
                out.append(("lit", "''", line))
            else:
                j = i + 1
                while j < n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                out.append(("life", text[i:j], line))
                i = j
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word == "r" and text.startswith("#", j) and j + 1 < n and \
                    (text[j + 1].isalpha() or text[j + 1] == "_"):
                # A raw identifier, r#name.
                k = j + 1
                while k < n and (text[k].isalnum() or text[k] == "_"):
                    k += 1
                out.append(("id", text[j + 1:k], line))
                i = k
                continue
            out.append(("id", word, line))
            i = j
        elif c.isdigit():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_" or
                             (text[j] == "." and j + 1 < n and text[j + 1].isdigit())):
                j += 1
            out.append(("lit", text[i:j], line))
            i = j
        else:
            for width, group in ((3, PUNCT3), (2, PUNCT2)):
                if text[i:i + width] in group:
                    out.append(("punct", text[i:i + width], line))
                    i += width
                    break
            else:
                out.append(("punct", c, line))
                i += 1
    return out


def _raw_prefix(text, i):
    """At a raw string (r"…", r#"…"#, br"…", cr"…"): the number of hashes
    and the index past the opening quote; None for anything else."""
    if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return None
    if text.startswith("br", i) or text.startswith("cr", i):
        j = i + 2
    elif text[i] == "r":
        j = i + 1
    else:
        return None
    k = j
    while k < len(text) and text[k] == "#":
        k += 1
    if k < len(text) and text[k] == '"':
        return k - j, k + 1
    return None


def _skip_char(text, i):
    """i at the opening quote of a character literal: the index past it."""
    j = i + 1
    if text[j] == "\\":
        j += 2
    while j < len(text) and text[j] != "'":
        j += 1
    return j + 1


def matching(toks, i):
    """toks[i] opens (, [ or {: the index of its closing token."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j][1] if toks[j][0] == "punct" else None
        if t in pairs:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def test_only_cfg(attr):
    """attr: the tokens inside #[...]. True for cfg(test) and cfg(all(test, …))."""
    words = [t[1] for t in attr]
    if words[:2] != ["cfg", "("]:
        return False
    if words[2:4] == ["test", ")"]:
        return True
    if words[2:4] == ["all", "("]:
        depth, k = 0, 4
        while k < len(words):
            if words[k] == "(":
                depth += 1
            elif words[k] == ")":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and words[k] == "test" and words[k - 1] in ("(", ","):
                return True
            k += 1
    return False


def item_end(toks, i):
    """toks[i] starts an item (or a statement): the index of its last token.
    `use`, `const`, `static`, `type`, `let` end at their `;`; anything else
    at its first `;` or at the `}` closing its first top-level brace."""
    to_semicolon = toks[i][1] in ("use", "const", "static", "type", "let") or \
        (toks[i][1] == "pub" and any(t[1] in ("use", "const", "static", "type")
                                     for t in toks[i + 1:i + 6]))
    j = i
    while j < len(toks):
        kind, t, _ = toks[j]
        if kind == "punct" and t in "([{":
            close = matching(toks, j)
            if t == "{" and not to_semicolon:
                return close
            j = close + 1
            continue
        if kind == "punct" and t == ";":
            return j
        if kind == "punct" and t == "}":
            # A statement at the end of a block, without `;`.
            return j - 1
        j += 1
    return len(toks) - 1


class File:
    def __init__(self, path, modpath, mod_rs):
        self.path = path
        self.modpath = modpath  # module path from the crate root
        self.mod_rs = mod_rs  # lib.rs / mod.rs: children live beside it
        self.children = []  # (name, modpath of the declaring scope)
        self.refs = []  # (top-level module or re-exported name, line)
        self.test_only = False


def parse(f):
    text = f.path.read_text()
    toks = tokens(text)
    # #![cfg(test)] at the top: the whole file is test code.
    i = 0
    while i + 2 < len(toks) and toks[i][1] == "#" and toks[i + 1][1] == "!" and toks[i + 2][1] == "[":
        close = matching(toks, i + 2)
        if test_only_cfg(toks[i + 3:close]):
            f.test_only = True
            return
        i = close + 1
    scopes = []  # one per open `{`: the inline module it opens, or None
    pending_attrs_test = False
    i = 0
    while i < len(toks):
        kind, t, line = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "punct" and t == "#" and nxt == "[":
            close = matching(toks, i + 1)
            pending_attrs_test |= test_only_cfg(toks[i + 2:close])
            i = close + 1
            continue
        if kind == "punct" and t == "#" and nxt == "!" and i + 2 < len(toks) and toks[i + 2][1] == "[":
            i = matching(toks, i + 2) + 1
            continue
        if pending_attrs_test:
            pending_attrs_test = False
            i = item_end(toks, i) + 1
            continue
        if kind == "id" and t == "mod" and toks[i + 1][0] == "id":
            name = toks[i + 1][1]
            after = toks[i + 2][1] if i + 2 < len(toks) else None
            if name == "tests":
                i = item_end(toks, i) + 1
                continue
            inline = [s for s in scopes if s is not None]
            if after == ";":
                f.children.append((name, inline))
                i += 3
                continue
            if after == "{":
                scopes.append(name)
                i += 3
                continue
        if kind == "punct" and t == "{":
            scopes.append(None)
        elif kind == "punct" and t == "}":
            if scopes:
                scopes.pop()
        elif kind == "id" and t == "crate" and nxt == "::" and not (
                i > 0 and toks[i - 1][1] == "::"):
            note_path(f, toks, i + 2, line)
        elif kind == "id" and t == "super" and nxt == "::" and not (
                i > 0 and toks[i - 1][1] == "::"):
            depth = len(f.modpath) + len([s for s in scopes if s is not None])
            j = i
            while j + 1 < len(toks) and toks[j][1] == "super" and toks[j + 1][1] == "::":
                depth -= 1
                j += 2
            if depth == 0:
                note_path(f, toks, j, line)
            i = j
            continue
        i += 1


def note_path(f, toks, i, line):
    """toks[i] follows `crate::` (or a `super::` chain at the root): a name
    or a `{…}` group; each first name is a reference."""
    if i >= len(toks):
        return
    if toks[i][0] == "id":
        f.refs.append((toks[i][1], line))
        return
    if toks[i][1] != "{":
        return
    close = matching(toks, i)
    depth, first = 0, True
    for kind, t, l in toks[i + 1:close]:
        if kind == "punct" and t in "([{":
            depth += 1
        elif kind == "punct" and t in ")]}":
            depth -= 1
        elif depth == 0 and kind == "punct" and t == ",":
            first = True
        elif depth == 0 and first and kind == "id":
            if t != "self":
                f.refs.append((t, l))
            first = False


def child_file(f, name, inline):
    base = f.path.parent if f.mod_rs else f.path.parent / f.path.stem
    for part in inline:
        base = base / part
    flat, nested = base / f"{name}.rs", base / name / "mod.rs"
    if flat.is_file():
        return File(flat, f.modpath + inline + [name], False)
    if nested.is_file():
        return File(nested, f.modpath + inline + [name], True)
    sys.exit(f"module-graph: {f.path.relative_to(root)} declares `mod {name};` but neither "
             f"{flat.relative_to(root)} nor {nested.relative_to(root)} is there")


def main():
    lib = File(src / "lib.rs", [], True)
    parse(lib)
    # Names lib.rs re-exports from a module: `pub use error::{Error, …};`.
    text_toks = tokens(lib.path.read_text())
    reexports = {}
    for k in range(len(text_toks) - 3):
        if text_toks[k][1] == "use" and text_toks[k + 1][0] == "id" and text_toks[k + 2][1] == "::":
            module = text_toks[k + 1][1]
            j = k + 3
            if text_toks[j][1] == "{":
                for kind, t, _ in text_toks[j + 1:matching(text_toks, j)]:
                    if kind == "id" and t != "self":
                        reexports[t] = module
            elif text_toks[j][0] == "id":
                reexports[text_toks[j][1]] = module
    modules = sorted(name for name, _ in lib.children)
    files = {m: [] for m in modules}
    queue = [child_file(lib, name, inline) for name, inline in lib.children]
    while queue:
        f = queue.pop()
        parse(f)
        if f.test_only:
            continue
        files[f.modpath[0]].append(f)
        queue.extend(child_file(f, name, inline) for name, inline in f.children)

    edges = {m: {} for m in modules}  # from -> to -> [site]
    for m in modules:
        for f in files[m]:
            for name, line in f.refs:
                target = name if name in files else reexports.get(name)
                if target is None or target == m:
                    continue
                edges[m].setdefault(target, []).append(f"{f.path.relative_to(root)}:{line}")
    reached = sum(len(v) for v in files.values())
    every = sum(1 for p in src.rglob("*.rs") if p.name not in ("lib.rs", "main.rs"))
    print(f"module-graph: {len(modules)} modules, {sum(len(e) for e in edges.values())} edges, "
          f"from {reached} files ({every - reached} files of test code left out)")
    width = max(len(m) for m in modules)
    for m in modules:
        print(f"{m:<{width}} -> {', '.join(sorted(edges[m])) or '(none)'}")

    failures = 0
    for comp in sccs(modules, edges):
        if len(comp) < 2:
            continue
        failures += 1
        print(f"circle: {', '.join(comp)}")
        for a in comp:
            for b in comp:
                if a < b and b in edges[a] and a in edges[b]:
                    print(f"  {a} <-> {b}")
                    print(f"    {a} -> {b}: {', '.join(edges[a][b])}")
                    print(f"    {b} -> {a}: {', '.join(edges[b][a])}")
    for m in modules:
        if m != CLI and CLI in edges[m]:
            failures += 1
            print(f"library module {m} imports cli: {', '.join(edges[m][CLI])}")
    if failures:
        print(f"module-graph: {failures} problem(s): the library's modules must form layers "
              "(docs/architecture.md), and only cli may import cli", file=sys.stderr)
        sys.exit(1)
    layer = {}
    for m in topological(modules, edges):
        layer[m] = 1 + max((layer[t] for t in edges[m]), default=-1)
    for n in range(max(layer.values()) + 1):
        print(f"layer {n}: {', '.join(m for m in modules if layer[m] == n)}")
    print("module-graph: no circles, and only cli imports cli")


def sccs(nodes, edges):
    """Tarjan's strongly connected components, each sorted, in sorted order."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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
            out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


def topological(nodes, edges):
    """Every module after the modules it imports (the graph has no circles)."""
    done, order = set(), []

    def visit(v):
        if v in done:
            return
        done.add(v)
        for w in sorted(edges[v]):
            visit(w)
        order.append(v)

    for v in nodes:
        visit(v)
    return order


if __name__ == "__main__":
    main()
