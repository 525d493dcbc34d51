#!/usr/bin/env bash
# Run the cargo-fuzz targets in scripts/fuzz/ on the stable toolchain.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
#   scripts/fuzz.sh --cpu CPU_SECONDS [TARGET ...]
#   scripts/fuzz.sh --export [TARGET ...]
#
# Runs each target (default: all of them) for SECONDS (default 60) of
# fuzzing, not counting the build. With --cpu, each target fuzzes until it
# has used CPU_SECONDS of CPU time (user + system, its own and its
# libFuzzer jobs'), in sessions of at most 300 wall seconds that share the
# corpus: on a machine doing other work, CPU time is what counts, and wall
# time cannot promise it. A target that needs more than 4 × CPU_SECONDS of
# wall time stops there and counts as failed.
#
# libFuzzer runs in fork mode and goes on
# past crashes, timeouts and out-of-memory inputs (-fork=1 -ignore_crashes=1
# -ignore_timeouts=1 -ignore_ooms=1), so one run finds every crash it can,
# not just the first; each one leaves its input in
# scripts/fuzz/artifacts/TARGET/ (crash-*, timeout-*, oom-*). At the end a
# summary gives, per target, the seconds run and the new artifacts found;
# the script exits 1 if there were any. Reproduce a crash on stable without
# cargo-fuzz:
#   (cd scripts/fuzz && cargo run --bin TARGET -- artifacts/TARGET/crash-...)
#
# Stable toolchain: `cargo fuzz` asks rustc for -Zsanitizer=address by default,
# which only nightly accepts. The fuzz bodies are safe Rust, where a sanitizer
# finds little that a panic does not, so the default here is
# `--sanitizer none`: every flag cargo-fuzz then passes (-Cpasses=sancov-module,
# -Cllvm-args=...) is stable. SANITIZER=address gets ASan anyway, on stable, by
# setting RUSTC_BOOTSTRAP=1 (the ASan runtime ships with stable's rust-std).
# Targets are built with debug assertions (-a), so integer overflow panics.
#
# Environment:
#   SANITIZER   none (default) | address | ...  (anything but none sets RUSTC_BOOTSTRAP=1)
#   FUZZ_ARGS   extra libFuzzer flags, e.g. "-fork=2" or "-max_len=65536"
#   FIXTURES    seed files (default: <repo>/fixtures), copied into each corpus
#   LLVM        LLVM 22 tool dir (default /usr/lib/llvm-22/bin), for made-up seeds
#
# The corpora (scripts/fuzz/corpus/TARGET/) persist between runs and are
# ignored by git, as are target/, artifacts/ and Cargo.lock. `--export`
# fuzzes nothing: it minimizes each target's corpus (cargo fuzz cmin) and
# replaces fixtures/fuzz/TARGET/ with it (inputs up to 64 KiB) and with every
# crash, timeout and OOM input found so far, so the tests replay them all
# (src/fuzz/tests.rs, `fuzz_corpora_replay`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FUZZ_DIR=$ROOT/scripts/fuzz
SECONDS_PER_TARGET=60
CPU_BUDGET=0
EXPORT=0
if [ "${1:-}" = --export ]; then
  EXPORT=1
  shift
elif [ "${1:-}" = --cpu ]; then
  [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --cpu needs a number of CPU seconds" >&2; exit 2; }
  CPU_BUDGET=$2
  SECONDS_PER_TARGET=$(( CPU_BUDGET < 300 ? CPU_BUDGET : 300 ))
  shift 2
elif [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  SECONDS_PER_TARGET=$1
  shift
fi
SANITIZER=${SANITIZER:-none}
FIXTURES=${FIXTURES:-$ROOT/fixtures}
LLVM=${LLVM:-/usr/lib/llvm-22/bin}
read -r -a EXTRA <<<"${FUZZ_ARGS:-}"

log() { printf '[fuzz %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

command -v cargo >/dev/null || die "cargo not found"
if ! cargo fuzz --version >/dev/null 2>&1; then
  log "cargo-fuzz missing: cargo install cargo-fuzz --locked"
  cargo install cargo-fuzz --locked
fi

fuzz_flags=(--fuzz-dir "$FUZZ_DIR" --sanitizer "$SANITIZER" --debug-assertions)
if [ "$SANITIZER" != none ]; then
  # cargo-fuzz passes -Zsanitizer=...; let stable rustc accept -Z flags.
  export RUSTC_BOOTSTRAP=1
fi

cd "$ROOT"
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list --fuzz-dir "$FUZZ_DIR")
fi
[ ${#targets[@]} -gt 0 ] || die "no fuzz targets in $FUZZ_DIR"

# ---------------------------------------------------------------- seeds
# Copy each fixture into the corpus under the SHA-1 of its content, which is
# how libFuzzer names corpus files itself, so re-seeding adds no duplicates.
seed_from_fixtures() {
  local corpus=$1 f sum n=0
  [ -d "$FIXTURES" ] || return 0
  while IFS= read -r -d '' f; do
    sum=$(sha1sum <"$f" | cut -d' ' -f1)
    if [ ! -e "$corpus/$sum" ]; then
      cp "$f" "$corpus/$sum"
      n=$((n + 1))
    fi
  done < <(find "$FIXTURES" -type f -size -4M -print0)
  [ $n = 0 ] || log "seeded $n file(s) from $FIXTURES"
}

# Per-target extra seeds: a function seed_TARGET CORPUS, when one exists.
# offload_binary_read: a few small binaries written by the real LLVM tool.
seed_offload_binary_read() {
  local corpus=$1 tool=$LLVM/llvm-offload-binary tmp f sum
  [ -x "$tool" ] || return 0
  tmp=$(mktemp -d)
  printf 'not an image, just some bytes\n' >"$tmp/a.txt"
  printf '\177ELF\2\1\1\0fake device code' >"$tmp/b.o"
  "$tool" -o "$tmp/one.bin" --image=file="$tmp/a.txt",triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp
  "$tool" -o "$tmp/two.bin" \
    --image=file="$tmp/b.o",triple=nvptx64-nvidia-cuda,arch=sm_90,kind=cuda \
    --image=file="$tmp/a.txt",triple=amdgcn-amd-amdhsa,arch=gfx942:xnack+,kind=hip,feature=+xnack
  "$tool" -o "$tmp/noarch.bin" --image=file="$tmp/b.o",triple=x86_64-unknown-linux-gnu,kind=openmp
  cat "$tmp/one.bin" "$tmp/two.bin" >"$tmp/concat.bin"
  for f in "$tmp"/*.bin; do
    sum=$(sha1sum <"$f" | cut -d' ' -f1)
    [ -e "$corpus/$sum" ] || cp "$f" "$corpus/$sum"
  done
  rm -rf "$tmp"
}

# kernels: small HIP code objects (default code object version and v4) and
# a CPU ELF built by clang-22, plus PTX text.
seed_kernels() {
  local corpus=$1 cc=$LLVM/clang tmp f sum
  [ -x "$cc" ] || return 0
  tmp=$(mktemp -d)
  printf '#define __global__ __attribute__((global))\n__attribute__((device)) int g;\n__global__ void k(int *p) { __attribute__((shared)) int s[64]; s[*p & 63] = *p; *p = s[(*p + 1) & 63] + g; }\n' >"$tmp/k.hip"
  for v in 4 5 6; do
    "$cc" -x hip --cuda-device-only -nogpulib -nogpuinc --offload-arch=gfx90a -mcode-object-version=$v -O2 \
      "$tmp/k.hip" -o "$tmp/k$v.co" 2>/dev/null || true
  done
  printf 'int g = 1;\nint __omp_offloading_10_20_f_l3(int x) { return x + g; }\n' >"$tmp/h.c"
  "$cc" -O2 -fPIC -shared "$tmp/h.c" -o "$tmp/h.so" 2>/dev/null || true
  printf '.version 8.0\n.target sm_80\n.address_size 64\n.visible .global .align 4 .u32 g;\n.visible .entry k(\n.param .u64 p\n)\n.maxntid 128, 1, 1\n{\nret;\n}\n' >"$tmp/k.ptx"
  for f in "$tmp"/*.co "$tmp"/*.so "$tmp"/*.ptx; do
    [ -e "$f" ] || continue
    sum=$(sha1sum <"$f" | cut -d' ' -f1)
    [ -e "$corpus/$sum" ] || cp "$f" "$corpus/$sum"
  done
  rm -rf "$tmp"
}

# object_rewrite: host objects compiled by clang-22 (C and C++ with groups,
# 64- and 32-bit, big-endian), a shared object, and LLVM's object bundles of
# the objects.
seed_object_rewrite() {
  local corpus=$1 cc=$LLVM/clang bundler=$LLVM/clang-offload-bundler tmp f sum
  [ -x "$cc" ] && [ -x "$bundler" ] || return 0
  tmp=$(mktemp -d)
  printf 'static int s = 3; int g = 4; int z[8];\nint f(int x) { return x + s + g + z[x & 7]; }\nint (*p)(int) = f;\n' >"$tmp/a.c"
  printf 'inline int twice(int x) { return 2 * x; }\ntemplate <class T> T thrice(T x) { return 3 * x; }\nint use(int y) { return twice(y) + thrice(y); }\n' >"$tmp/g.cpp"
  printf 'DEVICE' >"$tmp/dev"
  "$cc" -c -O2 "$tmp/a.c" -o "$tmp/a64.o"
  "$cc" -c -O0 -g --target=i386-linux-gnu "$tmp/a.c" -o "$tmp/a32.o"
  "$cc" -c -O2 --target=powerpc64-linux-gnu "$tmp/a.c" -o "$tmp/abe.o"
  "$cc" -c -O2 -fPIC -ffunction-sections -x c++ "$tmp/g.cpp" -o "$tmp/g.o"
  # Linked hosts, with program headers (lld through clang, when present).
  "$cc" -shared -fPIC -O2 -fuse-ld=lld "$tmp/a.c" -o "$tmp/liba.so" 2>/dev/null || true
  for f in a64 a32 abe g; do
    "$bundler" -type=o -targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a \
      -input="$tmp/$f.o" -input="$tmp/dev" -output="$tmp/fat-$f.o"
  done
  for f in "$tmp"/*.o "$tmp"/*.so; do
    [ -e "$f" ] || continue
    sum=$(sha1sum <"$f" | cut -d' ' -f1)
    [ -e "$corpus/$sum" ] || cp "$f" "$corpus/$sum"
  done
  rm -rf "$tmp"
}

# prune: the round-4 hostile inputs of issue #41 and what prune rewrites:
# a bundle of two GPUs, plain, in a tar, in zips with and without bytes in
# front, with unknown bytes around it, compressed; a relocatable object and
# a shared library holding it in .hip_fatbin (linked by the system cc), an
# archive of the object, a library whose section header table lies inside
# the gfx942 entry, and one with its .hip_fatbin section listed twice.
seed_prune() {
  local corpus=$1 tmp f sum
  command -v cc >/dev/null && command -v python3 >/dev/null || return 0
  tmp=$(mktemp -d)
  (
    cd "$tmp"
    printf 'host' >host
    head -c 3000 /dev/urandom >a90
    head -c 3000 /dev/urandom >a42
    "$ROOT/target/ci/offload-kit" bundle --type o -o k.hipfb host-x86_64-unknown-linux-gnu=host \
      hipv4-amdgcn-amd-amdhsa--gfx90a=a90 hipv4-amdgcn-amd-amdhsa--gfx942=a42 2>/dev/null ||
      cargo run -q --manifest-path "$ROOT/Cargo.toml" -- bundle --type o -o k.hipfb \
        host-x86_64-unknown-linux-gnu=host hipv4-amdgcn-amd-amdhsa--gfx90a=a90 \
        hipv4-amdgcn-amd-amdhsa--gfx942=a42
    "$ROOT/target/ci/offload-kit" bundle --type o --compress -o k.ccob host-x86_64-unknown-linux-gnu=host \
      hipv4-amdgcn-amd-amdhsa--gfx90a=a90 hipv4-amdgcn-amd-amdhsa--gfx942=a42 2>/dev/null || true
    tar cf k.tar k.hipfb
    python3 - <<'PY'
import zipfile, os
k = open('k.hipfb', 'rb').read()
for name, method in (('stored.zip', zipfile.ZIP_STORED), ('deflated.zip', zipfile.ZIP_DEFLATED)):
    with zipfile.ZipFile(name, 'w', method) as z:
        z.writestr('k.hipfb', k)
        z.writestr('pkg-1.0.dist-info/RECORD', '"a,b.so",sha256=x,1\nk.hipfb,sha256=y,%d\n' % len(k))
    open('sfx-' + name, 'wb').write(os.urandom(300) + open(name, 'rb').read())
open('front.bin', 'wb').write(os.urandom(200) + k)
open('behind.bin', 'wb').write(k + os.urandom(200))
PY
    printf '.section .hip_fatbin,"a"\n.p2align 12\n.incbin "k.hipfb"\n.data\nfb: .quad 0\n' >fb.s
    cc -c fb.s -o fb.o && cc -shared fb.o -o libfb.so && ar rc libfb.a fb.o
    python3 - <<'PY'
import struct
d = bytearray(open('libfb.so', 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
shnum, = struct.unpack_from('<H', d, 0x3c)
table = bytes(d[shoff:shoff + 64 * shnum])
k = open('k.hipfb', 'rb').read()
at = d.find(k)
if at > 0:
    # The table copied into the gfx942 entry's bytes, which prune drops.
    inner = at + k.find(open('a42', 'rb').read()[:64])
    moved = bytearray(d)
    moved[inner:inner + len(table)] = table
    struct.pack_into('<Q', moved, 0x28, inner)
    open('libfb-shdrs-inside.so', 'wb').write(moved)
# The .hip_fatbin header listed twice.
names_hdr = struct.unpack_from('<H', d, 0x3e)[0]
for i in range(shnum):
    h = table[64 * i:64 * i + 64]
    if struct.unpack_from('<I', h, 4)[0] == 1 and struct.unpack_from('<Q', h, 24)[0] == at - (at % 4096) + (at % 4096):
        pass
twice = bytearray(d) + table + table[64:128]
struct.pack_into('<Q', twice, 0x28, len(d))
struct.pack_into('<H', twice, 0x3c, shnum + 1)
open('libfb-twice.so', 'wb').write(twice)
PY
  ) >/dev/null 2>&1 || true
  for f in "$tmp"/*; do
    [ -f "$f" ] || continue
    sum=$(sha1sum <"$f" | cut -d' ' -f1)
    [ -e "$corpus/$sum" ] || cp "$f" "$corpus/$sum"
  done
  rm -rf "$tmp"
}

# Per-target libFuzzer limits, when tighter than the defaults: prune's work
# per input is held to 5 s and 512 MiB (issue #41's bound for each hostile
# input).
limits_prune() { printf '%s\n' -timeout=5 -rss_limit_mb=512; }

# ---------------------------------------------------------------- build, then run
log "building ${targets[*]} (sanitizer: $SANITIZER)"
for t in "${targets[@]}"; do
  cargo fuzz build "${fuzz_flags[@]}" "$t"
done

# CPU seconds (user + system) used so far by this script's finished
# children (fields cutime and cstime of /proc/$$/stat, in clock ticks): with
# other work on the machine, fuzzing time is CPU time, not wall time.
children_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($14 + $15) / hz }' "/proc/$$/stat"
}

# The inputs libFuzzer saved for a target (crashes, timeouts, OOMs).
artifacts_of() {
  find "$FUZZ_DIR/artifacts/$1" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | sort
}

# --export: the minimized corpus and every saved crash input into fixtures/.
if [ $EXPORT = 1 ]; then
  for t in "${targets[@]}"; do
    corpus=$FUZZ_DIR/corpus/$t
    [ -d "$corpus" ] || die "$t: no corpus in $corpus; fuzz it first"
    cargo fuzz cmin "${fuzz_flags[@]}" "$t" "$corpus" -- -rss_limit_mb=4096 -timeout=20 >/dev/null 2>&1 ||
      die "$t: cargo fuzz cmin failed"
    out=$ROOT/fixtures/fuzz/$t
    rm -rf "$out"
    mkdir -p "$out"
    find "$corpus" -maxdepth 1 -type f -size -65k -exec cp {} "$out/" \;
    while IFS= read -r a; do
      [ -n "$a" ] && cp "$a" "$out/"
    done < <(artifacts_of "$t")
    log "$t: $(find "$out" -type f | wc -l) input(s), $(du -sk "$out" | cut -f1) KiB in fixtures/fuzz/$t"
  done
  exit 0
fi

summary=()
failed=()
for t in "${targets[@]}"; do
  corpus=$FUZZ_DIR/corpus/$t
  artifacts=$FUZZ_DIR/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  seed_from_fixtures "$corpus"
  if declare -F "seed_$t" >/dev/null; then
    "seed_$t" "$corpus" || log "warning: seed_$t failed; going on"
  fi
  before=$(artifacts_of "$t")
  args=(-max_total_time="$SECONDS_PER_TARGET" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
    -artifact_prefix="$artifacts/")
  [ -f "$FUZZ_DIR/dict/$t.dict" ] && args+=(-dict="$FUZZ_DIR/dict/$t.dict")
  if declare -F "limits_$t" >/dev/null; then
    mapfile -t tighter < <("limits_$t")
    args+=("${tighter[@]}")
  fi
  if [ "$CPU_BUDGET" -gt 0 ]; then
    log "$t: until ${CPU_BUDGET} CPU seconds, corpus $(find "$corpus" -type f | wc -l) file(s)"
  else
    log "$t: ${SECONDS_PER_TARGET}s, corpus $(find "$corpus" -type f | wc -l) file(s)"
  fi
  start=$(date +%s)
  status=0
  sessions=0
  cpu=0
  while :; do
    sessions=$((sessions + 1))
    # A source change since the last session rebuilds the target here, so
    # that compiling is never counted as fuzzing.
    cargo fuzz build "${fuzz_flags[@]}" "$t" >/dev/null 2>&1 || die "$t: cargo fuzz build failed"
    session_before=$(children_cpu)
    # libFuzzer's fork mode has been seen to hang past -max_total_time
    # with no job left (its parent idle); a session that overstays is
    # killed and counts as ended, not as a failure.
    timeout --kill-after=30 $((SECONDS_PER_TARGET + 120)) \
      cargo fuzz run "${fuzz_flags[@]}" "$t" "$corpus" -- "${args[@]}" "${EXTRA[@]}" || status=$?
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then
      log "$t: session $sessions overstayed its time and was stopped"
      status=0
    fi
    cpu=$(( cpu + $(children_cpu) - session_before ))
    ran=$(( $(date +%s) - start ))
    [ "$CPU_BUDGET" -gt 0 ] && [ "$status" = 0 ] && [ "$cpu" -lt "$CPU_BUDGET" ] || break
    if [ "$ran" -ge $((4 * CPU_BUDGET)) ]; then
      log "$t: only $cpu CPU seconds in ${ran}s of wall time; stopping"
      status=124
      break
    fi
    log "$t: $cpu of $CPU_BUDGET CPU seconds after session $sessions; going on"
  done
  new=$(comm -13 <(printf '%s\n' "$before" | sed '/^$/d') <(artifacts_of "$t"))
  found=$(printf '%s\n' "$new" | sed '/^$/d' | wc -l)
  if [ "$found" -gt 0 ]; then
    log "$t: $found new crash input(s):"
    printf '%s\n' "$new" | sed '/^$/d; s/^/    /' >&2
    failed+=("$t")
  elif [ "$status" -ne 0 ]; then
    # libFuzzer itself failed (no input to blame): count it as a failure.
    log "$t: libFuzzer exited $status without saving an input"
    failed+=("$t")
    found="?"
  else
    log "$t: no crash"
  fi
  summary+=("$(printf '%-22s %6ss %6ss %4s  %s' "$t" "$ran" "$cpu" "$sessions" "$found")")
done

log "summary (target, seconds run, CPU seconds, sessions, new crash inputs):"
for line in "${summary[@]}"; do
  printf '    %s\n' "$line" >&2
done
if [ ${#failed[@]} -gt 0 ]; then
  log "failed: ${failed[*]}; inputs in $FUZZ_DIR/artifacts/"
  exit 1
fi
if [ "$CPU_BUDGET" -gt 0 ]; then
  log "all ${#targets[@]} target(s) used ${CPU_BUDGET} CPU seconds without a crash"
else
  log "all ${#targets[@]} target(s) ran ${SECONDS_PER_TARGET}s without a crash"
fi
