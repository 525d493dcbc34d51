# shellcheck shell=bash
# scripts/bench/goals.sh, sourced by scripts/bench.sh: checks and inputs more than one group shares: lw_goal, rss_goal, make_fat_exe, scan_check_archs, kernels_check, images_of.
# lw_goal ROW_ID SPEEDUP [MAX_MIB [IMAGE_MIB]]: notes whether our speed-up
# over LLVM in that row reaches SPEEDUP (a goal set for a 256 MiB image:
# the note says so for a smaller IMAGE_MIB), and fails the row if our peak
# RSS exceeds MAX_MIB.
lw_goal() {
  timed llvm && ran ours || return 0
  local x
  x=$(awk -v a="${ROW[$1.llvm.med]}" -v b="${ROW[$1.ours.med]}" 'BEGIN { printf "%.1f", a / b }')
  local goal="goal: $2x"
  # #14 sets the goals for a 256 MiB image; smaller ones are bound by
  # process start-up and LLVM's fixed costs.
  [ "${4:-256}" -ge 256 ] || goal="goal for 256 MiB: $2x"
  if awk -v x="$x" -v g="$2" 'BEGIN { exit !(x >= g) }'; then
    row_note "${x}x faster ($goal)"
  else
    row_note "only ${x}x faster ($goal)"
  fi
  if [ -n "${3:-}" ]; then rss_goal "$1" "$3" under; fi
}

# rss_goal ROW_ID MAX_MIB [under]: fails the row if our peak RSS in it
# exceeds MAX_MIB (with "under": reaches it), notes that it does not
# otherwise.
rss_goal() {
  ran ours || return 0
  local peak=${ROW[$1.ours.peak]}
  if [ "${3:-}" = under ]; then
    if awk -v p="$peak" -v m="$2" 'BEGIN { exit !(p < m) }'; then
      row_note "peak RSS under $2 MiB"
    else
      row_fail "peak RSS $peak MiB, over $2 MiB"
    fi
  elif awk -v p="$peak" -v m="$2" 'BEGIN { exit !(p <= m) }'; then
    row_note "peak RSS within $2 MiB (goal)"
  else
    row_fail "peak RSS $peak MiB, over the $2 MiB goal"
  fi
}

# make_fat_exe IN_DIR OUT_DIR: OUT_DIR/fat.exe, an executable carrying the 4
# images of IN_DIR (img0..3.bin) as OpenMP images for ARCHS in
# .llvm.offloading (packed by llvm-offload-binary, wrapped by us).
make_fat_exe() {
  local I=$1 O=$2 k packs=()
  for k in 0 1 2 3; do
    "$LLVM/llvm-offload-binary" -o "$O/p$k.bin" \
      "--image=file=$I/img$k.bin,triple=$TRIPLE,arch=${ARCHS[k]},kind=openmp" ||
      die "llvm-offload-binary failed"
    packs+=("$O/p$k.bin")
  done
  printf 'int main(void) { return 0; }\n' >"$O/main.c"
  "$OURS" wrap --kind=openmp -o "$O/w.o" "${packs[@]}" || die "offload-kit wrap failed"
  cc -O2 "$O/main.c" "$O/w.o" -o "$O/fat.exe" -Wl,--unresolved-symbols=ignore-all ||
    die "linking the fat executable failed"
  rm -f "${packs[@]}" "$O/w.o"
}

# scan_check_archs ROW_ID: our listing in that row shows the 4 archs.
scan_check_archs() {
  ran ours || return 0
  local n
  n=$(grep -c -F -e "${ARCHS[0]}" -e "${ARCHS[1]}" -e "${ARCHS[2]}" -e "${ARCHS[3]}" \
    "$W/raw/$1.ours.stdout" || true)
  if [ "$n" -ge 4 ]; then
    row_note "lists the 4 archs"
  else
    row_fail "inspect does not list the 4 archs"
  fi
}

# kernels_check CUOBJDUMP_OUT OURS_OUT: the kernels `cuobjdump -res-usage`
# lists and those of the cubins in `inspect --kernels`'s table, each with its
# figures (REG, STACK, SHARED, LOCAL, CONSTANT[n], TEXTURE, SURFACE,
# SAMPLER), compared as multisets; prints what it found, fails on a
# difference.
kernels_check() {
  python3 - "$1" "$2" <<'PY'
import collections, re, sys
theirs, fn = collections.Counter(), None
for line in open(sys.argv[1], errors="replace"):
    if line.startswith(" Function "):
        fn = line[len(" Function "):].rstrip().rstrip(":")
    elif fn is not None and line.startswith("  REG:"):
        theirs[(fn, tuple(sorted(line.split())))] += 1
        fn = None
names = {"reg": "REG", "stack": "STACK", "shared": "SHARED", "local": "LOCAL",
         "texture": "TEXTURE", "surface": "SURFACE", "sampler": "SAMPLER"}
ours, cubin = collections.Counter(), False
for line in open(sys.argv[2], errors="replace"):
    words = line.split()
    if len(words) >= 2 and words[0] in ("cubin", "ptx", "amdgpu", "elf") and re.search(r": \d+ kernels?, ", line):
        cubin = words[0] == "cubin"
    elif cubin and len(words) >= 2 and words[0] == "kernel":
        figs = dict(w.split("=", 1) for w in words[2:])
        figs.pop("max_threads", None)
        figs.setdefault("stack", "UNKNOWN")
        out = []
        for k, v in figs.items():
            m = re.fullmatch(r"constant\[(\d+)\]", k)
            out.append(f"CONSTANT[{m.group(1)}]:{v}" if m else f"{names.get(k, k)}:{v}")
        ours[(words[1], tuple(sorted(out)))] += 1
n = sum(theirs.values())
if n and ours == theirs:
    print(f"same {n} kernels and figures as cuobjdump")
    sys.exit(0)
a, b = theirs - ours, ours - theirs
print(f"{sum(a.values())} of cuobjdump's {n} kernel lines not ours, {sum(b.values())} of ours not its; e.g. {next(iter(a or b), None)}")
sys.exit(1)
PY
}

# images_of FILE: one line per device image `inspect --hash` lists in FILE:
# its kind, target and hash.
images_of() {
  "$OURS" inspect --hash "$1" | awk '$1 ~ /^[0-9]+$/ {print $3, $5, $8}'
}
