#!/usr/bin/env python3
"""The import graph between the crate's top-level modules, and a check that
it has no circles and that the library never imports the command line;
then the same graph between files, held to scripts/module-graph-allowed.txt.

  scripts/module-graph.py               # both graphs; exit 1 on anything new
  scripts/module-graph.py --write-docs  # and the layers into docs/architecture.md

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
may call only modules of lower layers. The table of the "## Layers"
section of docs/architecture.md (`| layer | modules |`, one row a layer,
its modules in backquotes) must be those layers, each module once: the
script names every module whose row is wrong and fails; with
`--write-docs` it writes the rows instead (the text around them is
left as it is).

The file graph: every library file above (src/lib.rs included) is a node,
known by its module path (src/a/b.rs and src/a/b/mod.rs are `a::b`). A
path in file A names a module path: `crate::…`, `self::…`, `super::…`
chains, and `x::…` for a child `x` that A declares (`pub use raw::Header`
in a mod.rs), each `use` group expanded. The path lands on the file B
whose module path is its longest prefix; when the next name is one that
B only imports (a re-export, or a name a child reaches through
`super::`), it goes on to the file that name is imported from, and so on
to the file that defines it. Then A -> B for the defining file and for
every file passed through on the way (A needs B's re-export as much as
the definition behind it), unless B is A, and but for A's own module
roots (a file passed through whose module path is a prefix of A's: the
face a module shows the rest of the crate, which its files may reach
their siblings through). So `super::path::PathError` in prune/wheel.rs
is an edge to prune/path.rs, which re-exports it, and to
prune/path/error.rs, which defines it; a circle that closes only through
a re-export is a circle. A `mod` declaration alone is no edge, and a
path through a name a `use` made local (`use super::raw; raw::X`)
counts only through that `use`. So a module root that re-exports a
child and defines something the child uses is a circle of the two files.

Checked on it: no circle of files (a strongly connected component of two
or more), and no format module (FORMATS: bundle, offload_binary, fatbin,
archive, package, bitcode, host) naming `files` or calling
`println!`, `eprintln!`, `print!` or `eprint!` outside test code. What
was there when the check began is listed in
scripts/module-graph-allowed.txt, one line each; the script prints every
finding as allowed or NEW and fails on a NEW one, and on a line of the
list that no longer happens, so the list only shrinks.

Checked last: no library file but src/bytes.rs names `from_le_bytes`,
`from_be_bytes` or `from_ne_bytes` outside test code (format readers
take numbers out of bytes through src/bytes.rs: its cursor, `le_at`,
`le`, `be`); each use elsewhere fails, listed as file:line."""
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
src = root / "src"
CLI = "cli"
PRINTS = {"println", "eprintln", "print", "eprint"}
# The standard conversions of bytes to numbers: only src/bytes.rs calls them.
FROM_BYTES = {"from_le_bytes", "from_be_bytes", "from_ne_bytes"}
BYTES_FILE = src / "bytes.rs"
# The format modules (module paths): they read and write bytes, so they
# never import `files` (the file-level operations) and never print.
FORMATS = [["bundle"], ["offload_binary"], ["fatbin"], ["archive"], ["package"],
           ["bitcode"], ["host"]]
ALLOWED = root / "scripts" / "module-graph-allowed.txt"
# Its "## Layers" section holds the layers' table that main() checks.
DOCS = root / "docs" / "architecture.md"

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
            j = _block_comment_end(text, i)
            line += text.count("\n", i, j)
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


def _block_comment_end(text, i):
    """i at a `/*`: the index past the `*/` that closes it (they nest)."""
    depth, j = 1, i + 2
    while j < len(text) and depth:
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
        else:
            j += 1
    return j


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
        self.paths = []  # (absolute module path named, line): for the file graph
        self.imports = {}  # name a `use` brings in -> absolute path
        self.prints = []  # lines of println!, eprintln!, print!, eprint!
        self.from_bytes = []  # lines naming from_le_bytes, from_be_bytes, from_ne_bytes
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
    # The file's own child modules (`mod x;`, `mod x {`): `x::…` names them.
    declared = {toks[k + 1][1] for k in range(len(toks) - 2)
                if toks[k][1] == "mod" and toks[k + 1][0] == "id" and toks[k + 2][1] in (";", "{")}
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
        if kind == "id" and nxt == "::" and not (i > 0 and toks[i - 1][1] == "::"):
            note_full_paths(f, toks, i, [s for s in scopes if s is not None], declared)
        if kind == "id" and t in PRINTS and nxt == "!" and not (
                i > 0 and toks[i - 1][1] == "::"):
            f.prints.append(line)
        if kind == "id" and t in FROM_BYTES:
            f.from_bytes.append(line)
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


def note_full_paths(f, toks, i, inline, declared):
    """toks[i] is a name followed by `::`: when it is `crate`, `self`,
    `super` or a child module the file declares, each path it starts (a
    `use` group gives several) goes into f.paths as an absolute module
    path, and, in a `use`, into f.imports under the name it brings in."""
    first, line = toks[i][1], toks[i][2]
    base = f.modpath + inline
    if first == "crate":
        start, j = [], i + 2
    elif first == "self":
        start, j = list(base), i + 2
    elif first == "super":
        start, j = list(base), i
        while j + 1 < len(toks) and toks[j][1] == "super" and toks[j + 1][1] == "::":
            if not start:
                return
            start, j = start[:-1], j + 2
    elif first in declared and not inline:
        start, j = base + [first], i + 2
    else:
        return
    in_use = i > 0 and toks[i - 1][1] == "use"
    for segs, alias in expand_path(toks, j, start):
        f.paths.append((segs, line))
        if in_use and alias and alias != "_":
            f.imports[alias] = segs


def expand_path(toks, j, prefix):
    """The paths that start at toks[j] after the segments `prefix`, with
    the name each brings in (None for a glob): `a::b`, `a::{b, c::d}`,
    `a::*`, `{self as x}`."""
    segs = list(prefix)
    while j < len(toks):
        kind, t, _ = toks[j]
        if kind == "id" and t == "self" and j > 0 and toks[j - 1][1] in ("{", ","):
            alias = segs[-1] if segs else None
            if j + 2 < len(toks) and toks[j + 1][1] == "as":
                alias = toks[j + 2][1]
            return [(segs, alias)]
        if kind == "id":
            segs.append(t)
            if j + 1 < len(toks) and toks[j + 1][1] == "::":
                j += 2
                continue
            alias = t
            if j + 2 < len(toks) and toks[j + 1][1] == "as":
                alias = toks[j + 2][1]
            return [(segs, alias)]
        if kind == "punct" and t == "*":
            return [(segs, None)]
        if kind == "punct" and t == "{":
            close = matching(toks, j)
            out, depth, k = [], 0, j + 1
            starts = [k]
            for m in range(j + 1, close):
                tm = toks[m][1] if toks[m][0] == "punct" else None
                if tm in ("(", "[", "{"):
                    depth += 1
                elif tm in (")", "]", "}"):
                    depth -= 1
                elif tm == "," and depth == 0:
                    starts.append(m + 1)
            for s in starts:
                if s < close:
                    out.extend(expand_path(toks, s, segs))
            return out
        break
    return [(segs, None)] if segs else []


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


def library_files(lib):
    """The files that the declarations of `lib` (src/lib.rs, parsed) reach,
    each parsed, test code left out: {top-level module: [File]}.
    scripts/check-sizes.py uses it too."""
    files = {name: [] for name, _ in lib.children}
    queue = [child_file(lib, name, inline) for name, inline in lib.children]
    while queue:
        f = queue.pop()
        parse(f)
        if f.test_only:
            continue
        files[f.modpath[0]].append(f)
        queue.extend(child_file(f, name, inline) for name, inline in f.children)
    return files


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
    files = library_files(lib)

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
    else:
        layer = {}
        for m in topological(modules, edges):
            layer[m] = 1 + max((layer[t] for t in edges[m]), default=-1)
        for n in range(max(layer.values()) + 1):
            print(f"layer {n}: {', '.join(m for m in modules if layer[m] == n)}")
        print("module-graph: no circles, and only cli imports cli")
        failures += layer_table(modules, layer, "--write-docs" in sys.argv[1:])
    failures += file_level([lib] + [f for m in modules for f in files[m]])
    failures += from_bytes_outside([lib] + [f for m in modules for f in files[m]])
    if failures:
        sys.exit(1)


def layer_table(modules, layer, write):
    """Compares the layers with the table of DOCS's "## Layers" section
    (`| n | `a`, `b` |` rows), or, with `write`, puts them there; the
    number of problems (1 when the table differs or is missing)."""
    lines = DOCS.read_text().split("\n")
    try:
        at = lines.index("## Layers")
        head = next(i for i in range(at, len(lines)) if lines[i].startswith("| layer |"))
    except (ValueError, StopIteration):
        print(f"layers: no '## Layers' section with a '| layer | modules |' table in "
              f"{DOCS.relative_to(root)}", file=sys.stderr)
        return 1
    end = head + 2  # past the header and the |---|---| line
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    rows = [f"| {n} | {', '.join(f'`{m}`' for m in modules if layer[m] == n)} |"
            for n in range(max(layer.values()) + 1)]
    if write:
        if lines[head + 2:end] != rows:
            lines[head + 2:end] = rows
            DOCS.write_text("\n".join(lines))
            print(f"layers: written into {DOCS.relative_to(root)}")
        return 0
    documented = {}  # module -> the layers of the rows that name it
    for row in lines[head + 2:end]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        for m in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells[1] if len(cells) > 1 else ""):
            documented.setdefault(m, []).append(cells[0])
    wrong = [f"  {m}: layer {', '.join(documented.get(m, ['(none)']))} in the table, "
             f"{layer[m]} by its imports"
             for m in modules if documented.get(m) != [str(layer[m])]]
    wrong += [f"  {m}: layer {', '.join(documented[m])} in the table, no such module"
              for m in sorted(documented) if m not in layer]
    if wrong or lines[head + 2:end] != rows:
        print(f"layers: the table in {DOCS.relative_to(root)} differs from the imports' layers "
              "(scripts/module-graph.py --write-docs writes it):", file=sys.stderr)
        for w in wrong or ["  its rows are not written as --write-docs writes them"]:
            print(w, file=sys.stderr)
        return 1
    print(f"layers: the table in {DOCS.relative_to(root)} is the imports' layers")
    return 0


def file_level(every):
    """The file graph's circles and the format modules' imports of `files`
    and prints, held to scripts/module-graph-allowed.txt; the number of
    problems (new ones, and entries of the list that no longer hold)."""
    by_mod = {tuple(f.modpath): f for f in every}

    def resolve(segs, hops=0):
        """The files a path passes through, the one that defines its name
        last: each file it lands on that only imports the next name (a
        re-export, or a `use` a child reaches through `super::`) comes
        before the file that name is imported from."""
        k = len(segs)
        while tuple(segs[:k]) not in by_mod:
            k -= 1
        g, rest = by_mod[tuple(segs[:k])], segs[k:]
        if rest and rest[0] in g.imports and hops < 16:
            return [g] + resolve(g.imports[rest[0]] + rest[1:], hops + 1)
        return [g]

    name = {id(f): str(f.path.relative_to(root)) for f in every}
    edges = {name[id(f)]: {} for f in every}
    for f in every:
        for segs, line in f.paths:
            chain = resolve(segs)
            for g in chain:
                # A file passed through on the way is an edge too, unless
                # it is f's own module root (or one above it): that root
                # is its module's face to the rest of the crate.
                through = g is not chain[-1] and f.modpath[:len(g.modpath)] == g.modpath
                if g is not f and not through:
                    edges[name[id(f)]].setdefault(name[id(g)], []).append(line)
    nodes = sorted(edges)
    print(f"file-graph: {len(nodes)} files, {sum(len(e) for e in edges.values())} edges")

    found = []  # (kind, files, detail)
    for comp in sccs(nodes, edges):
        if len(comp) > 1:
            pairs = [f"    {a}:{','.join(map(str, sorted(set(edges[a][b]))))} -> {b}"
                     for a in comp for b in sorted(edges[a]) if b in comp]
            loop = " -> ".join(shortest_loop(comp, edges))
            found.append(("circle", comp, f"  shortest: {loop}\n" + "\n".join(pairs)))
    for f in every:
        if not any(f.modpath[:len(m)] == m for m in FORMATS):
            continue
        lines = sorted({line for segs, line in f.paths if segs[:1] == ["files"]})
        if lines:
            found.append(("imports-files", [name[id(f)]], f"    lines {lines}"))
        if f.prints:
            found.append(("prints", [name[id(f)]], f"    lines {sorted(set(f.prints))}"))

    allowed = []
    for n, raw in enumerate(ALLOWED.read_text().splitlines(), 1):
        words = raw.split("#")[0].split()
        if words:
            allowed.append((words[0], set(words[1:]), n))
    used, problems = set(), 0
    for kind, members, detail in found:
        # A circle passes when an entry holds all its files (it may have
        # shrunk since); the other kinds name their one file.
        match = [a for a in allowed if a[0] == kind and set(members) <= a[1]]
        used.update(a[2] for a in match)
        label = "allowed" if match else "NEW"
        problems += not match
        print(f"{kind} ({label}): {' '.join(members)}")
        print(detail)
    for kind, members, n in allowed:
        if n not in used:
            problems += 1
            print(f"{ALLOWED.relative_to(root)}:{n}: '{kind} {' '.join(sorted(members))}' "
                  "no longer happens: remove the line")
    if problems:
        print(f"file-graph: {problems} problem(s): no new circle between files, no format "
              "module importing `files` or printing; the allowed ones in "
              f"{ALLOWED.relative_to(root)} only shrink", file=sys.stderr)
    else:
        print(f"file-graph: {len(found)} known problem(s), all in "
              f"{ALLOWED.relative_to(root)}, and nothing new")
    return problems


def from_bytes_outside(every):
    """The library lines outside src/bytes.rs that name `from_le_bytes`,
    `from_be_bytes` or `from_ne_bytes` (test code left out): printed as
    file:line; their number."""
    sites = [f"{f.path.relative_to(root)}:{line}"
             for f in sorted(every, key=lambda f: f.path) if f.path != BYTES_FILE
             for line in sorted(set(f.from_bytes))]
    if sites:
        print(f"from-bytes: {len(sites)} use(s) of from_le_bytes/from_be_bytes/from_ne_bytes "
              "outside src/bytes.rs (read through its cursor or le_at, le, be):", file=sys.stderr)
        for site in sites:
            print(f"  {site}", file=sys.stderr)
    else:
        print("from-bytes: no from_le_bytes/from_be_bytes/from_ne_bytes outside src/bytes.rs "
              "(test code left out)")
    return len(sites)


def shortest_loop(comp, edges):
    """A shortest way from comp's first file back to itself within comp
    (a strongly connected component), the first file at both ends."""
    start, came = comp[0], {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v]):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return path[::-1] + [start]
                if w in comp and w not in came:
                    came[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


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
