#!/usr/bin/env python3
"""Checks that no Rust source file under src/ or linker-tests/ is over 800
lines (docs/development.md, "Size"); exit 1 listing each one that is, with
its count, longest first.

  scripts/check-sizes.py

A longer file is split along its seams into private submodules, the
module root re-exporting what its users name (issue #58)."""
import sys
from pathlib import Path

LIMIT = 800
root = Path(__file__).resolve().parent.parent

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
    sys.exit(1)
print(f"sizes: no file under src/ or linker-tests/ is over {LIMIT} lines")
