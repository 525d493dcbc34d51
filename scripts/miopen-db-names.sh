#!/usr/bin/env bash
# Writes the names MIOpen installs into share/miopen/db, each with the GPU
# it serves, from a MIOpen source tree's git history: the committed
# src/kernels/*.{db,fdb.txt,kdb}.bz2 and *.model files, renamed as MIOpen's
# CMakeLists installs them (bzip2 unpacked, a perf db `X.db` turned into
# the text `X.db.txt`). The GPU is the longest name that starts another
# file's name before a `_`, or is a kernel database's or model's whole
# stem, so `gfx90878` (gfx908 with 0x78 CUs) serves gfx908. src/companion/tests.rs reads the result.
#
#   bash scripts/miopen-db-names.sh GIT_DIR [COMMIT] > fixtures/companion/miopen-db-names.txt
#
# GIT_DIR: a clone of ROCm/MIOpen (a bare one will do).
set -euo pipefail
git_dir=$1
commit=${2:-HEAD}
full=$(git --git-dir="$git_dir" rev-parse "$commit")
git --git-dir="$git_dir" ls-tree -r --name-only "$full" src/kernels/ |
  sed -n 's|^src/kernels/\(gfx[^/]*\)$|\1|p' |
  python3 -c '
import re, sys
full = sys.argv[1]
names = []
for n in sys.stdin.read().split():
    if n.endswith(".model"):
        names.append(n)
    elif n.endswith(".db.bz2"):
        names.append(n[:-4] + ".txt")
    elif n.endswith(".fdb.txt.bz2") or n.endswith(".kdb.bz2"):
        names.append(n[:-4])
# A GPU: what a name holds before a "_" (gfx906_60.db.txt), or the whole
# stem of a kernel database or model (gfx942.kdb, gfx908.tn.model).
alone = {n.split("_")[0] for n in names if "_" in n}
alone |= {n.split(".")[0] for n in names if n.endswith((".kdb", ".tn.model")) and "_" not in n}
print(f"# MIOpen installed share/miopen/db names, from ROCm/MIOpen {full} (scripts/miopen-db-names.sh)")
for n in sorted(names):
    head = re.split(r"[_.]", n)[0]
    gpu = max((g for g in alone if head.startswith(g) and len(head) - len(g) in (0, 2, 3)), key=len, default=None)
    if gpu is None:
        sys.exit(f"no GPU for {n}")
    print(n, gpu)
' "$full"
