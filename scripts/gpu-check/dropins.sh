#!/usr/bin/env bash
# The vendor drop-ins against NVIDIA's own tools on a machine with a CUDA
# toolkit (the GPU itself is not used): every library of device code in the
# Python venv and the toolkit's static libraries listed by NVIDIA's
# `cuobjdump -lelf -lptx` and `cuobjdump -res-usage` and by offload-kit run
# as `cuobjdump`, and static libraries pruned by NVIDIA's `nvprune` and by
# offload-kit run as `nvprune` (SKIP_NVPRUNE=1 leaves that out).
#
#   bash scripts/gpu-check/dropins.sh path/to/offload-kit OUTDIR
#
# Prints PASS or FAIL lines and a summary; the exit status is the FAIL count
# (capped at 100). OUTDIR gets the differing outputs (at most a few).
set -u
OK=$(readlink -f "$1")
OUTDIR=$(readlink -f "$2")
W=${DROPINS_WORK:-/tmp/dropins}
rm -rf "$W"; mkdir -p "$W/bin" "$OUTDIR"; cd "$W"
fails=0 passes=0 kept=0
pass() { passes=$((passes + 1)); }
fail() {
  echo "FAIL: $*"; fails=$((fails + 1))
}
keep() { # keep NAME FILE...: the first few differences come back
  [ $kept -lt 6 ] || return 0
  kept=$((kept + 1)); tar -czf "$OUTDIR/diff-$kept-$1.tgz" "${@:2}" 2>/dev/null
}
"$OK" install-links "$W/bin" >/dev/null || { echo "FAIL: install-links"; exit 1; }
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
NVPRUNE=$(command -v nvprune || ls /usr/local/cuda/bin/nvprune 2>/dev/null)
echo "cuobjdump: $CUOBJDUMP ($("$CUOBJDUMP" --version 2>&1 | tail -n 1))"
echo "nvprune: ${NVPRUNE:-none}"
PY=$(command -v python3)
VENV=$("$PY" -c 'import sys; print(sys.prefix)')
CUDA=$(dirname "$(dirname "$(readlink -f "$CUOBJDUMP")")")

# 1. cuobjdump -lelf -lptx on every shared library that holds device code.
mapfile -t libs < <("$OK" size --json "$VENV" 2>/dev/null | "$PY" -c '
import json, sys
doc = json.load(sys.stdin)
for f in doc.get("files", []):
    if f.get("total", {}).get("images", 0) > 0 and ".so" in f["path"] and "!" not in f["path"]:
        print(f["path"])' | sort -u)
echo "libraries with device code in the venv: ${#libs[@]}"
mapfile -t statics < <(find "$CUDA" -name '*_static.a' -size -400M 2>/dev/null | sort | head -n 12)
echo "static libraries in $CUDA: ${#statics[@]}"
n=0
for lib in "${libs[@]}" "${statics[@]}"; do
  for opts in "-lelf -lptx" "-res-usage"; do
    n=$((n + 1)); d=$W/l$n; mkdir -p "$d"
    # shellcheck disable=SC2086 # the options split at spaces
    (cd "$d" && timeout 300 "$CUOBJDUMP" $opts "$lib" >theirs.out 2>theirs.err; echo $? >theirs.rc)
    # shellcheck disable=SC2086
    (cd "$d" && timeout 300 "$W/bin/cuobjdump" $opts "$lib" >ours.out 2>ours.err; echo $? >ours.rc)
    if cmp -s "$d/theirs.out" "$d/ours.out" && cmp -s "$d/theirs.err" "$d/ours.err" && cmp -s "$d/theirs.rc" "$d/ours.rc"; then
      pass
    else
      fail "cuobjdump $opts $lib: exit $(cat "$d/theirs.rc") / $(cat "$d/ours.rc"), $(wc -l <"$d/theirs.out") / $(wc -l <"$d/ours.out") lines"
      diff "$d/theirs.out" "$d/ours.out" | head -n 6
      head -c 300 "$d/theirs.err" "$d/ours.err"
      diff "$d/theirs.out" "$d/ours.out" | head -c 200000 >"$d/diff.txt"
      keep "$(basename "$lib")" -C "$d" diff.txt theirs.err ours.err theirs.rc ours.rc
    fi
    rm -f "$d/theirs.out" "$d/ours.out"
  done
done
echo "cuobjdump (-lelf -lptx, and -res-usage): $passes of $n identical"

# 2. nvprune of the static libraries, byte for byte.
if [ -n "${NVPRUNE:-}" ] && [ "${SKIP_NVPRUNE:-0}" != 1 ]; then
  p0=$passes m=0
  for lib in "${statics[@]}"; do
    for arch in sm_90 sm_80; do
      m=$((m + 1)); d=$W/p$m; mkdir -p "$d"
      timeout 300 "$NVPRUNE" -arch $arch -o "$d/theirs.a" "$lib" >"$d/theirs.out" 2>"$d/theirs.err"; echo $? >"$d/theirs.rc"
      timeout 300 "$W/bin/nvprune" -arch $arch -o "$d/ours.a" "$lib" >"$d/ours.out" 2>"$d/ours.err"; echo $? >"$d/ours.rc"
      if cmp -s "$d/theirs.a" "$d/ours.a" && cmp -s "$d/theirs.out" "$d/ours.out" &&
        cmp -s "$d/theirs.err" "$d/ours.err" && cmp -s "$d/theirs.rc" "$d/ours.rc"; then
        pass
      else
        fail "nvprune -arch $arch $lib: exit $(cat "$d/theirs.rc") / $(cat "$d/ours.rc"), $(stat -c %s "$d/theirs.a" 2>/dev/null) / $(stat -c %s "$d/ours.a" 2>/dev/null) bytes"
        head -c 300 "$d/theirs.err" "$d/ours.err"
        keep "nvprune-$arch-$(basename "$lib")" -C "$d" theirs.out theirs.err theirs.rc ours.out ours.err ours.rc
      fi
      rm -f "$d/theirs.a" "$d/ours.a"
    done
  done
  echo "nvprune: $((passes - p0)) of $m identical"
fi
echo "dropins: $passes passed, $fails failed"
[ $fails -gt 100 ] && fails=100
exit $fails
