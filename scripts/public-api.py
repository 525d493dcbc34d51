#!/usr/bin/env python3
"""The library's public API, listed from rustdoc's "all items" page, against
the committed listing docs/public-api.txt.

  cargo doc --no-deps && scripts/public-api.py           # exit 1 if it differs
  cargo doc --no-deps && scripts/public-api.py --update  # rewrite the listing

One line per item, "kind path" (kinds as rustdoc groups them: struct, enum,
fn, trait, const, type, macro ...), sorted. Methods and fields are
not listed: they belong to an item that is. The point is that the API only
changes on purpose: a change shows as a diff to commit with the code."""
import html, re, sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
page = root / "target" / "doc" / "offload_kit" / "all.html"
listing = root / "docs" / "public-api.txt"

# rustdoc's headings, as the keyword that declares the item.
KINDS = {"structs": "struct", "enums": "enum", "functions": "fn", "constants": "const",
         "traits": "trait", "types": "type", "macros": "macro", "statics": "static",
         "unions": "union", "derives": "derive", "attributes": "attribute"}

if not page.is_file():
    sys.exit(f"public-api: {page} is missing: run `cargo doc --no-deps` first")
text = page.read_text()
items = []
# <h3 id="structs">Structs</h3><ul class="all-items"><li><a href="...">path</a></li>...</ul>
for kind, body in re.findall(r'<h3 id="([a-z-]+)">[^<]*</h3><ul class="all-items">(.*?)</ul>', text, re.S):
    for path in re.findall(r'<li><a href="[^"]+">([^<]+)</a></li>', body):
        items.append(f"{KINDS.get(kind, kind)} {html.unescape(path)}")
if not items:
    sys.exit(f"public-api: no items found in {page} (has rustdoc's page changed?)")
items.sort()
new = "".join(line + "\n" for line in items)
header = ("# The public API of the offload_kit library: one item per line, made by\n"
          "# scripts/public-api.py --update from `cargo doc --no-deps`. Checked by\n"
          "# scripts/test.sh: change it on purpose, with the code.\n")
if "--update" in sys.argv[1:]:
    listing.write_text(header + new)
    print(f"public-api: {len(items)} items written to {listing.relative_to(root)}")
    sys.exit(0)
old = [l for l in listing.read_text().splitlines() if l and not l.startswith("#")] if listing.is_file() else []
if old == items:
    print(f"public-api: {len(items)} items, as listed")
    sys.exit(0)
gone = sorted(set(old) - set(items))
added = sorted(set(items) - set(old))
for l in gone:
    print(f"- {l}")
for l in added:
    print(f"+ {l}")
print(f"public-api: the public API differs from {listing.relative_to(root)} "
      f"({len(added)} added, {len(gone)} gone): run scripts/public-api.py --update "
      "if that is meant", file=sys.stderr)
sys.exit(1)
