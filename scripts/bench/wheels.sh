# shellcheck shell=bash
# scripts/bench/wheels.sh, sourced by scripts/bench.sh: the group wheels.
# A wheel (issue #72: the zip rewrite in the package layer): NVIDIA's cuRAND
# wheel from PyPI (nvidia-curand-cu12 10.3.7.77, 56 MB, libcurand with
# fatbins for sm_50 to sm_90; scripts/real-libs.sh) pruned to sm_80 with
# `prune -o`, against the least a manual route costs: `unzip` of the wheel
# and `zip -r` of the tree again, nothing pruned and the RECORD left as it
# was (goal: ours <= 1.0x its time, peak RSS <= 512 MiB). The pruned wheel
# must hold a RECORD whose row for the library matches it (pip's check).
# Not in the default STEPS (a download): STEPS=wheels.
NEEDS_wheels=""
step_wheels() {
  local cache O=$W/out/wheels whl bytes
  cache=$(bash "$ROOT/scripts/real-libs.sh") || die "scripts/real-libs.sh failed"
  whl=$(echo "$cache"/nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl)
  [ -f "$whl" ] || die "no cuRAND wheel in $cache"
  mkdir -p "$O"
  bytes=$(stat -c %s "$whl")
  cat "$whl" >/dev/null
  local llvm=(sh -c 'rm -rf "$1" && mkdir "$1" && cd "$1" && unzip -q "$2" && zip -qr -X "$3" .' sh "$O/manual" "$whl" "$O/manual.whl")
  local ours=("$OURS" prune --keep sm_80 -o "$O/slim.whl" "$whl")
  local llvm_rm=("$O/manual.whl" "$O/manual") ours_rm=("$O/slim.whl")
  bench_row "whl.prune.curand" "prune nvidia-curand-cu12's wheel to sm_80 (56 MB; LLVM column: unzip, zip -r of the tree, nothing pruned)" "$bytes" llvm ours
  unset llvm_rm ours_rm
  if ran llvm && ran ours; then
    time_goal "whl.prune.curand" 1.0 "unzip and zip's"
    row_note "$(stat -c %s "$O/slim.whl") bytes against the wheel's $bytes"
    if ! python3 - "$O/slim.whl" <<'PY'
import base64, csv, hashlib, io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    for path, digest, size in csv.reader(io.TextIOWrapper(z.open(record), "utf-8")):
        if not digest:
            continue
        data = z.read(path)
        sha = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={sha}" and int(size) == len(data), path
PY
    then
      row_fail "the pruned wheel's RECORD does not match its members"
    fi
    rss_goal "whl.prune.curand" 512
  fi
  [ "$KEEP" = 1 ] || rm -rf "$O"
}
