"""One wheel's pruning checked, for scripts/ml-wheels.sh.

    python3 images.py ORIG.json PRUNED.json PRUNE.json SO_LIST

ORIG.json and PRUNED.json are `offload-kit inspect --json --hash` of the
original and the pruned wheel, PRUNE.json is `offload-kit prune --json`'s
report. Checks, member by member (each ELF or PE member holding device
code):
- the pruned member's images, each with its kind, target and hash, are
  some of the original member's (nothing new, nothing altered);
- every one of them is of a target and kind the report says it kept, and
  every cubin of such a target and kind in the original is still there
  (PTX may go: `--ptx newest` keeps one per fatbin);
- the report's kept image counts add up to what the pruned wheel holds;
- the member got smaller, or the report names it as not shrunk.

Prints one line per member with device code (path, bytes before and
after, images before and after, `shrunk`, `in place: WHY` or `unchanged`),
writes the members with device code to SO_LIST (one per line, for the CPU
run's check that they were loaded), and then a summary line
`members=N shrunk=N in_place=N unchanged=N`. Exits 1 when a check fails.
"""

import collections
import json
import re
import sys


def members(path):
    """The inspect report of each member: {member: file entry}."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for entry in doc["files"]:
        name = entry["path"].split("!/", 1)[1] if "!/" in entry["path"] else entry["path"]
        out[name] = entry
    return out


def images(entry):
    """A member's images as a multiset of (kind, target, hash)."""
    return collections.Counter(
        (i["image_kind"], i["arch"], i["hash"])
        for i in entry["images"]
    )


def not_shrunk(report):
    """The members the prune report names as rewritten in place: {member: why}."""
    said = report.get("not_shrunk") or ""
    out = {}
    for m in re.finditer(r"'([^']+)': (.*?)(?=; '|$)", said):
        out[m.group(1)] = m.group(2)
    return out


def main():
    orig, pruned = members(sys.argv[1]), members(sys.argv[2])
    with open(sys.argv[3]) as f:
        prune = json.load(f)
    report = prune["files"][0] if prune.get("files") else {}
    kept_groups = {(g["kind"], g["target"]) for g in report.get("kept", [])}
    kept_count = sum(g["images"] for g in report.get("kept", []))
    in_place = not_shrunk(report)
    failures = []
    counts = collections.Counter()
    total_after = 0
    with open(sys.argv[4], "w") as so_list:
        for name, entry in sorted(orig.items()):
            if not entry["images"]:
                continue
            so_list.write(name + "\n")
            counts["members"] += 1
            after = pruned.get(name)
            if after is None:
                failures.append(f"{name}: not in the pruned wheel")
                continue
            a, b = images(entry), images(after)
            total_after += sum(b.values())
            if b - a:
                failures.append(f"{name}: images not in the original: {sorted(b - a)[:3]}")
            for kind, target, _ in b:
                if (kind, target) not in kept_groups:
                    failures.append(f"{name}: kept a {target} {kind} the report does not keep")
                    break
            lost = [k for k in a - b if k[0] == "cubin" and (k[0], k[1]) in kept_groups]
            if lost:
                failures.append(f"{name}: lost {len(lost)} kept cubin(s), e.g. {lost[0]}")
            size_a, size_b = entry["size"], after["size"]
            if size_b < size_a:
                how = "shrunk"
            elif name in in_place:
                how = f"in place: {in_place[name]}"
            elif a == b:
                how = "unchanged (every image kept)"
            else:
                how = "NOT SHRUNK, no reason given"
                failures.append(f"{name}: dropped images but kept its size, and the report says nothing")
            counts["shrunk" if how == "shrunk" else "in_place" if how.startswith("in place") else "other"] += 1
            print(f"  {name}: {size_a} -> {size_b} bytes, {sum(a.values())} -> {sum(b.values())} images, {how}")
    if report and total_after != kept_count:
        failures.append(f"the report keeps {kept_count} images, the pruned wheel holds {total_after}")
    for f in failures:
        print(f"  CHECK FAILED: {f}")
    print(
        f"members={counts['members']} shrunk={counts['shrunk']} "
        f"in_place={counts['in_place']} other={counts['other']} failures={len(failures)}"
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
