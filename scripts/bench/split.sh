# shellcheck shell=bash
# scripts/bench/split.sh, sourced by scripts/bench.sh: the group split.
# `offload-kit split` (issue #74) of one fat package into one package per
# GPU, against the same number of separate `prune --keep GPU -o` runs (the
# LLVM column: what a packager does without split), and, in a note, against
# one `prune -o`. Each output is compressed again and its bytes are
# prune's, so the floor is that compression spread over the CPUs; the goals
# (the issue's) with N outputs and p = min(CPUs, N):
#   split <= max(0.4, 1.3/p) x the N prunes, <= max(1.5, 1.3*N/p) x one prune,
#   peak RSS <= 512 MiB.
# Two inputs: Debian trixie's librocblas0 (166 MB .deb, code and Tensile
# files for 13 GPUs; scripts/real-libs.sh --rocblas) and NVIDIA's cuRAND
# wheel (nvidia-curand-cu12 10.3.7.77, 56 MB; scripts/real-libs.sh). Each
# output is checked against the prune of its group: a .deb's data.tar.xz
# byte for byte, a wheel's members but variant.json and RECORD byte for byte.
# Not in the default STEPS (downloads; the rocBLAS row needs 4 GB in W and
# minutes per prune): STEPS=split.
#
#   SPLIT_ROCBLAS_GPUS  the rocBLAS groups, one GPU each, separated by spaces
#                       (default: all it serves, as `split --per-gpu` finds them)
#   SPLIT_WHEEL_GPUS    the same for the wheel
NEEDS_split=""
step_split() {
  local cache rocblas
  cache=$(bash "$ROOT/scripts/real-libs.sh") || die "scripts/real-libs.sh failed"
  split_row "split.whl.curand" "nvidia-curand-cu12's wheel (56 MB)" \
    "$cache/nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl" "${SPLIT_WHEEL_GPUS:-}"
  rocblas=$(bash "$ROOT/scripts/real-libs.sh" --rocblas) || die "scripts/real-libs.sh --rocblas failed"
  split_row "split.deb.rocblas" "librocblas0's .deb (166 MB)" \
    "$rocblas/librocblas0_5.5.1+dfsg-7_amd64.deb" "${SPLIT_ROCBLAS_GPUS:-}"
}

# split_gpus INPUT OUTDIR: the GPUs `split --per-gpu` makes one output each
# of (one untimed split), separated by spaces.
split_gpus() {
  "$OURS" split --per-gpu --json -d "$2" "$1" >"$2.json" || die "split --per-gpu of $1 failed"
  python3 - "$2.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print(" ".join(",".join(o["gpus"]) for f in doc["files"] for o in f["outputs"] if o["gpus"]))
PY
  rm -rf "$2" "$2.json"
}

# split_row ID WHAT INPUT [GPUS]: the row of one input.
split_row() {
  local id=$1 what=$2 input=$3 gpus=$4 O=$W/out/$1 bytes n p g
  [ -f "$input" ] || die "no $input"
  rm -rf "$O" && mkdir -p "$O"
  cat "$input" >/dev/null
  [ -n "$gpus" ] || gpus=$(split_gpus "$input" "$O/probe")
  read -r -a split_list <<<"$gpus"
  n=${#split_list[@]}
  [ "$n" -gt 0 ] || die "$input: no GPU to split by"
  p=$(nproc)
  [ "$p" -le "$n" ] || p=$n
  bytes=$(stat -c %s "$input")
  local ext=${input##*.} llvm=(sh -c 'in=$1 out=$2 bin=$3 ext=$4; shift 4
    mkdir -p "$out" || exit 1
    for g; do "$bin" prune --keep "$g" -o "$out/$g.$ext" "$in" >/dev/null || exit 1; done' sh)
  llvm+=("$input" "$O/prunes" "$OURS" "$ext" "${split_list[@]}")
  local ours=("$OURS" split --json -d "$O/split")
  for g in "${split_list[@]}"; do ours+=(--gpus "$g"); done
  ours+=("$input")
  local llvm_rm=("$O/prunes") ours_rm=("$O/split")
  bench_row "$id" "split $what into $n GPUs (LLVM column: $n separate prune --keep GPU -o)" "$bytes" llvm ours
  unset llvm_rm ours_rm
  if ran llvm && ran ours; then
    time_goal "$id" "$(awk -v p="$p" 'BEGIN { g = 1.3 / p; printf "%.2f", (g > 0.4 ? g : 0.4) }')" \
      "the $n prunes'"
    rss_goal "$id" 512
    split_one_prune "$id" "$input" "${split_list[0]}" "$n" "$p"
    python3 - "$W/raw/$id.ours.stdout" "$O/prunes" "$ext" <<'PY' || row_fail "an output is not its group's prune"
import json, subprocess, sys, zipfile
doc, prunes, ext = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
checked = 0
for f in doc["files"]:
    for o in f["outputs"]:
        if not o["gpus"]:
            continue
        pruned = f"{prunes}/{','.join(o['gpus'])}.{ext}"
        if ext == "deb":
            member = lambda d: subprocess.run(["ar", "p", d, "data.tar.xz"], check=True, capture_output=True).stdout
            assert member(o["path"]) == member(pruned), o["path"]
        else:
            with zipfile.ZipFile(o["path"]) as a, zipfile.ZipFile(pruned) as b:
                names = lambda z: [n for n in z.namelist() if not n.endswith(("/variant.json", "/RECORD"))]
                assert names(a) == names(b), o["path"]
                for n in names(a):
                    assert a.read(n) == b.read(n), (o["path"], n)
        checked += 1
print(f"{checked} outputs are their prunes")
PY
  fi
  [ "$KEEP" = 1 ] || rm -rf "$O"
}

# split_one_prune ID INPUT GPU N P: one prune of INPUT to GPU timed as the
# rows are, and the row's split against it (goal <= max(1.5, 1.3*N/P)).
split_one_prune() {
  local id=$1 out=$W/out/$1/one.${2##*.} goal x
  time_cmd "$W/raw/$id.one.timer" "$out" "" "$OURS" prune --keep "$3" -o "$out" "$2"
  if [ "$T_OK" != 1 ]; then
    row_fail "one prune --keep $3 -o failed"
    return
  fi
  goal=$(awk -v n="$4" -v p="$5" 'BEGIN { g = 1.3 * n / p; printf "%.2f", (g > 1.5 ? g : 1.5) }')
  x=$(awk -v a="$T_MED" -v b="${ROW[$id.ours.med]}" 'BEGIN { printf "%.2f", b / a }')
  if awk -v x="$x" -v g="$goal" 'BEGIN { exit !(x <= g) }'; then
    row_note "one prune: $T_MED s, the split ${x}x it (goal <= ${goal}x)"
  else
    row_fail "one prune: $T_MED s, the split ${x}x it, over the ${goal}x goal"
  fi
}
