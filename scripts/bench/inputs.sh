# shellcheck shell=bash
# scripts/bench/inputs.sh, sourced by scripts/bench.sh: the device images the groups read, and the build of our binary.
# ---------------------------------------------------------------- inputs
img_size() { echo $((($1 << 20) - 4099 * ($2 + 1) - 17)); }   # same rule as mkinputs.py

# Stand-in for shared/bench/mkinputs.py, same layout and sizes: deterministic
# device images that compress about as well as real code (zstd -3 --long:
# ~3.5x, gzip -6: ~2.2x). Each image is a stream of "phrases" (runs of a few
# short byte strings, like instruction sequences, symbol names and relocations)
# drawn with a Zipf-like skew, each followed by 2 fresh random bytes so that no
# long run repeats exactly. About 20 s per GiB.
FALLBACK_GEN=$(cat <<'PY'
import os, random, sys
out, sizes = sys.argv[1], [int(x) for x in sys.argv[2:]]
def isize(s, k): return (s << 20) - 4099 * (k + 1) - 17
big = max(sizes)
for k in range(4):
    rng = random.Random(0x0ff10ad + k)
    words = [rng.randbytes(rng.randint(1, 8)) for _ in range(4096)]
    phrases = [b''.join(rng.choices(words, k=rng.randint(4, 16))) for _ in range(1 << 16)]
    cum, t = [], 0.0
    for i in range(len(phrases)):
        t += 1.0 / (i + 1)
        cum.append(t)
    d = os.path.join(out, f's{4 * big}M'); os.makedirs(d, exist_ok=True)
    left = isize(big, k)
    with open(os.path.join(d, f'img{k}.bin'), 'wb') as f:
        while left:
            n = 1 << 16
            picked = rng.choices(phrases, cum_weights=cum, k=n)
            noise = rng.randbytes(2 * n)
            blob = b''.join([p + noise[2 * i:2 * i + 2] for i, p in enumerate(picked)])[:left]
            f.write(blob); left -= len(blob)
for s in sizes:
    if s == big:
        continue
    d = os.path.join(out, f's{4 * s}M'); os.makedirs(d, exist_ok=True)
    for k in range(4):
        with open(os.path.join(out, f's{4 * big}M', f'img{k}.bin'), 'rb') as f, \
             open(os.path.join(d, f'img{k}.bin'), 'wb') as o:
            o.write(f.read(isize(s, k)))
PY
)

make_inputs() {
  local s k need=0
  for s in "${SIZE_LIST[@]}"; do
    for k in 0 1 2 3; do
      local f=$IN/s$((4 * s))M/img$k.bin
      [ -f "$f" ] && [ "$(stat -c %s "$f")" = "$(img_size "$s" "$k")" ] || need=1
    done
  done
  [ $need = 1 ] || { log "reusing device images in $IN"; return 0; }
  if [ -f "$SHARED_BENCH/mkinputs.py" ]; then
    log "making device images ($SIZES MiB each) with $SHARED_BENCH/mkinputs.py"
    python3 "$SHARED_BENCH/mkinputs.py" "$IN" "${SIZE_LIST[@]}" >&2
  else
    log "making device images ($SIZES MiB each) with the built-in generator (no $SHARED_BENCH)"
    python3 -c "$FALLBACK_GEN" "$IN" "${SIZE_LIST[@]}"
  fi
  for s in "${SIZE_LIST[@]}"; do
    for k in 0 1 2 3; do
      [ "$(stat -c %s "$IN/s$((4 * s))M/img$k.bin")" = "$(img_size "$s" "$k")" ] ||
        die "input $IN/s$((4 * s))M/img$k.bin has the wrong size"
    done
  done
}

# ---------------------------------------------------------------- build
build_ours() {
  if [ -n "${OFFLOAD_KIT:-}" ]; then
    OURS=$(realpath "$OFFLOAD_KIT")
    [ -x "$OURS" ] || die "OFFLOAD_KIT=$OFFLOAD_KIT is not an executable"
  else
    log "cargo build --release"
    (cd "$ROOT" && cargo build --release) || die "cargo build --release failed"
    local tdir
    tdir=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    OURS=$tdir/release/offload-kit
  fi
  rm -rf "$LINKS"
  "$OURS" install-links "$LINKS" >/dev/null || die "$OURS install-links $LINKS failed"
  local t
  for t in llvm-offload-binary clang-offload-packager clang-offload-bundler; do
    [ -x "$LINKS/$t" ] || die "install-links made no $LINKS/$t"
  done
  if [ -n "${BASELINE:-}" ]; then
    BASE=$(realpath "$BASELINE")
    [ -x "$BASE" ] || die "BASELINE=$BASELINE is not an executable"
    rm -rf "$BASE_LINKS"
    "$BASE" install-links "$BASE_LINKS" >/dev/null || die "$BASE install-links $BASE_LINKS failed"
  fi
}
