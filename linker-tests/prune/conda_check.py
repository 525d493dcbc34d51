"""Helpers of linker-tests/prune/conda.rs, run with the venv of
scripts/conda-tools.sh:

  conda_check.py info PREFIX [PATH=PLACEHOLDER ...]
      writes PREFIX/info/{index.json,files,paths.json} for every file below
      PREFIX (as conda-build lays them out: paths.json with two-space
      indents and sorted keys), giving PATH the prefix placeholder
  conda_check.py check DIR
      checks every paths.json row of the unpacked package DIR against its
      file (sha256, size_in_bytes); prints the rows' paths and the lines of
      info/files as JSON
  conda_check.py install PACKAGE PREFIX CACHE
      installs the package file into PREFIX with py-rattler, offline
  conda_check.py rawtar OUT PREFIX mid|no FROM=TO [gnu|pax]
      a .tar.bz2 of PREFIX made by hand: its tar cut short, a member renamed
      (a name over 100 bytes goes in a GNU long name, or a pax header)
"""

import asyncio
import hashlib
import json
import os
import sys


def info(prefix, placeholders):
    files = []
    for root, dirs, names in os.walk(prefix):
        dirs.sort()
        for n in sorted(names):
            p = os.path.relpath(os.path.join(root, n), prefix)
            if not p.startswith("info/"):
                files.append(p)
    rows = []
    for p in files:
        data = open(os.path.join(prefix, p), "rb").read()
        row = {
            "_path": p,
            "path_type": "hardlink",
            "sha256": hashlib.sha256(data).hexdigest(),
            "size_in_bytes": len(data),
        }
        if p in placeholders:
            row["prefix_placeholder"] = placeholders[p]
            row["file_mode"] = "text"
        rows.append(row)
    os.makedirs(os.path.join(prefix, "info"), exist_ok=True)
    index = {
        "arch": "x86_64",
        "build": "h0_0",
        "build_number": 0,
        "depends": [],
        "license": "proprietary",
        "name": "gpulib",
        "platform": "linux",
        "subdir": "linux-64",
        "timestamp": 1700000000000,
        "version": "1.0",
    }
    with open(os.path.join(prefix, "info/index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
    with open(os.path.join(prefix, "info/files"), "w") as f:
        f.write("".join(p + "\n" for p in files))
    with open(os.path.join(prefix, "info/paths.json"), "w") as f:
        json.dump({"paths": rows, "paths_version": 1}, f, indent=2, sort_keys=True)


def check(d):
    doc = json.load(open(os.path.join(d, "info/paths.json")))
    for row in doc["paths"]:
        data = open(os.path.join(d, row["_path"]), "rb").read()
        if hashlib.sha256(data).hexdigest() != row["sha256"]:
            sys.exit(f"{row['_path']}: sha256 does not match")
        if len(data) != row["size_in_bytes"]:
            sys.exit(f"{row['_path']}: size_in_bytes does not match")
    files = open(os.path.join(d, "info/files")).read().splitlines()
    print(json.dumps({"paths": [r["_path"] for r in doc["paths"]], "files": files}))


def install(package, prefix, cache):
    import rattler

    async def go():
        record = await rattler.RepoDataRecord.from_package_archive(package)
        await rattler.install([record], target_prefix=prefix, cache_dir=cache, show_progress=False)

    asyncio.run(go())
    # py-rattler's runtime threads have crashed the interpreter's teardown
    # now and then (a segmentation fault after the install): leave at once.
    sys.stdout.flush()
    os._exit(0)


def rawtar(out, prefix, cut, rename, form="gnu"):
    """A .tar.bz2 of PREFIX (info/ first), its tar cut in the middle of
    its last member's data when CUT is "mid", the member FROM named TO
    (as it is, even absolute) when RENAME is FROM=TO, in FORM's format."""
    import bz2
    import io
    import tarfile

    frm, _, to = rename.partition("=")
    names = []
    for root, dirs, files in os.walk(prefix):
        dirs.sort()
        names += [os.path.relpath(os.path.join(root, n), prefix) for n in sorted(files)]
    names.sort(key=lambda p: (not p.startswith("info/"), p))
    buf = io.BytesIO()
    fmt = tarfile.PAX_FORMAT if form == "pax" else tarfile.GNU_FORMAT
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for n in names:
            ti = t.gettarinfo(os.path.join(prefix, n), arcname=n)
            if n == frm:
                ti.name = to
            with open(os.path.join(prefix, n), "rb") as f:
                t.addfile(ti, f)
    data = buf.getvalue()
    if cut == "mid":
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            last = t.getmembers()[-1]
        data = data[: last.offset_data + last.size // 2]
    open(out, "wb").write(bz2.compress(data, 9))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "info":
        info(args[0], dict(a.split("=", 1) for a in args[1:]))
    elif cmd == "check":
        check(args[0])
    elif cmd == "install":
        install(*args)
    elif cmd == "rawtar":
        rawtar(*args)
