# shellcheck shell=bash
# scripts/bench/lz4.sh, sourced by scripts/bench.sh: the group lz4.
# LZ4 block decoding alone (issue #46): offload-kit's decoder
# (src/fatbin/lz4/) against C liblz4's LZ4_decompress_safe (liblz4 1.10.0
# from the lz4-sys crate, built at -O3) on the LZ4 entries of libcusparse
# and libcurand, in the bench-only program scripts/lz4-bench (its own cargo
# workspace: liblz4 never reaches offload-kit's build). One process decodes
# every block with each decoder in turn, the order alternating, LZ4_ROUNDS
# rounds (default 11), after checking that both give the same bytes; each
# pass is timed by the CPU time of its thread, so other processes on the
# machine count far less than in the wall-clock rows. The LLVM column is
# liblz4 there; its seconds are CPU seconds per pass (median), and the peak
# columns are not measured. Not in the default STEPS (it needs the
# downloads of real_libs): STEPS=lz4 scripts/bench.sh.
NEEDS_lz4=""
step_lz4() {
  local cache bin out=$W/out/lz4 rounds=${LZ4_ROUNDS:-11}
  [[ $rounds =~ ^[1-9][0-9]*$ ]] || die "LZ4_ROUNDS must be a positive integer (got '$rounds')"
  cache=$(bash "$ROOT/scripts/real-libs.sh" --bench) || die "scripts/real-libs.sh --bench failed"
  mkdir -p "$out"
  python3 - "$cache" "$out" <<'PY'
import shutil, sys, zipfile
cache, out = sys.argv[1], sys.argv[2]
for whl, member in (
    ("nvidia_cusparse_cu12-12.5.10.65-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", "nvidia/cusparse/lib/libcusparse.so.12"),
    ("nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl", "nvidia/curand/lib/libcurand.so.10"),
):
    with zipfile.ZipFile(f"{cache}/{whl}") as z, z.open(member) as src, open(f"{out}/{member.rsplit('/', 1)[1]}", "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
  log "cargo build --release (scripts/lz4-bench)"
  (cd "$ROOT/scripts/lz4-bench" && CARGO_TARGET_DIR="$ROOT/target/lz4-bench" cargo build --release -q) ||
    die "building scripts/lz4-bench failed"
  bin=$ROOT/target/lz4-bench/release/offload-kit-lz4-bench
  local lib name raw
  for lib in libcusparse.so.12 libcurand.so.10; do
    name=${lib%%.so*}
    raw=$W/raw/lz4.$name
    log "LZ4 blocks of $lib, $rounds rounds"
    local id="lz4.$name" label="LZ4 block decoding, the LZ4 entries of $lib (CPU s per pass; LLVM column: liblz4 1.10.0 LZ4_decompress_safe)"
    ROW_IDS+=("$id") ROW_LABELS+=("$label") ROW_NOTES+=("")
    ROW[$id.load1]=$(cut -d' ' -f1 /proc/loadavg)
    local side
    for side in llvm ours; do
      ROW[$id.$side.med]=FAILED ROW[$id.$side.peak]=n/a ROW[$id.$side.min]=n/a
      ROW[$id.$side.max]=n/a ROW[$id.$side.cpu]=n/a ROW[$id.$side.cmd]="$bin --rounds $rounds --only $side $out/$lib"
    done
    if ! (cd "$out" && "$bin" --rounds "$rounds" "$lib") >"$raw" 2>&1; then
      ROW_BYTES+=(0)
      tail -n 5 "$raw" | sed 's/^/    /' >&2
      row_fail "scripts/lz4-bench failed on $lib (the decoders disagree, or it did not run)"
      continue
    fi
    local row blocks bytes_in bytes_out ratio streamed
    row=$(grep '^ROW' "$raw") || die "no ROW line in $raw"
    IFS=$'\t' read -r _ _ blocks bytes_in bytes_out "ROW[$id.llvm.med]" "ROW[$id.ours.med]" \
      "ROW[$id.llvm.min]" "ROW[$id.llvm.max]" "ROW[$id.ours.min]" "ROW[$id.ours.max]" ratio streamed <<<"$row"
    ROW[$id.llvm.cpu]=${ROW[$id.llvm.med]} ROW[$id.ours.cpu]=${ROW[$id.ours.med]}
    ROW_BYTES+=("$bytes_out")
    row_note "$blocks blocks, $bytes_in bytes -> $bytes_out, the same output from both; median of the rounds' ratios ${ratio}x; ours streamed as extract reads (256 KiB reads) ${streamed} s"
    log "  liblz4 ${ROW[$id.llvm.med]}, ours ${ROW[$id.ours.med]} (median CPU s per pass)"
  done
  [ "$KEEP" = 1 ] || rm -rf "$out"
}
