#!/usr/bin/env bash
# Side-by-side benchmarks: offload-kit against the LLVM 22 tools it replaces,
# on the same inputs, in one run. Every row is timed as a whole process
# (start-up included): median wall time of RUNS runs after one untimed run
# that checks the command works (and warms the page cache), plus the median
# peak RSS. Our compat rows run our binary through links named after the LLVM
# tools (made by `offload-kit install-links`) with identical arguments.
#
#   scripts/bench.sh                       # all groups, 4 MiB and 256 MiB images
#   QUICK=1 scripts/bench.sh               # smoke run: 1 MiB images, 1 run (CI)
#   STEPS=offload_binary SIZES="64" RUNS=3 scripts/bench.sh
#
# Environment:
#   STEPS       groups to run, in order (default "startup offload_binary bundler
#               wrapper scan scan_tree"; also real_libs, installs, images,
#               wheels, squashfs, split and lz4, on downloaded libraries)
#   LZ4_ROUNDS  rounds of the lz4 group's decoders (default 11)
#   SIZES       MiB per device image; each size makes one set of rows over 4
#               images (default "4 256"; QUICK: "1")
#   WRAP_SIZES  MiB of the one device image each wrapper row wraps (default
#               "16 256 1024"; QUICK: "1")
#   RUNS        timed runs per command (default 5; QUICK: 1)
#   W           work dir (default: mktemp -d). Removed at the end unless KEEP=1;
#               a W you name yourself loses only its bulky in/ out/ bin/
#   KEEP=1      keep everything in W
#   EXTRACT_TO  where the real_libs extract row writes (default: under /dev/shm)
#   IN          where the device images live (default $W/in); a dir you name is
#               never removed, so it can be reused across runs
#   BENCH_TSV   TSV output (default $W/bench.tsv)
#   LLVM        LLVM 22 tool dir (default /usr/lib/llvm-22/bin)
#   OFFLOAD_KIT use this binary instead of building with `cargo build --release`
#   BASELINE    another offload-kit binary to pair ours with (scripts/bench-compare.sh):
#               each of our commands is also run with it, the two alternating run
#               by run (A B, B A, ...), and the TSV gains its figures and the median
#               of the runs' ratios (ours/baseline); LLVM's commands then run once,
#               untimed, for the outputs later rows read
#   QUICK=1     fast smoke settings (explicit SIZES / RUNS still win)
#   SHARED_BENCH  where mkinputs.py is looked for (default <repo>/../shared/bench;
#               a missing dir selects the built-in generator)
#
# Inputs come from <repo>/../shared/bench/mkinputs.py when present (device
# images cut from the ELF files under /usr/lib), else from a generator below.
# The timer is the shared timeit.py's method, written out below with one
# addition: rows that write an output delete the previous run's output before
# each timed run (untimed), for both tools alike; and a row that changes its
# input in place sets it up again before each run (untimed: --before).
#
# Exit status: 1 if LLVM 22 is missing, the build fails, any command fails, or
# any correctness check (e.g. our pack byte-identical to LLVM's) fails.
#
# Adding a group (bundler, wrapper, scanner, ...): write step_NAME (call
# make_inputs, then bench_row / row_note / row_fail per row, as
# step_offload_binary does), list the LLVM tools it needs in NEEDS_NAME, and
# add NAME to the default STEPS.
set -euo pipefail

if [ $# -gt 0 ]; then
  case $1 in
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh takes no arguments (settings come from the environment; see --help)" >&2; exit 2 ;;
  esac
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED_BENCH=${SHARED_BENCH:-$(dirname "$ROOT")/shared/bench}
LLVM=${LLVM:-/usr/lib/llvm-22/bin}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  SIZES=${SIZES:-1}
  RUNS=${RUNS:-1}
else
  SIZES=${SIZES:-"4 256"}
  RUNS=${RUNS:-5}
fi
STEPS=${STEPS:-"startup offload_binary bundler wrapper scan scan_tree"}
KEEP=${KEEP:-0}

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

read -r -a SIZE_LIST <<<"$SIZES"
[ ${#SIZE_LIST[@]} -gt 0 ] || die "SIZES is empty"
for s in "${SIZE_LIST[@]}"; do
  [[ $s =~ ^[1-9][0-9]*$ ]] || die "SIZES must be whole MiB per image (got '$s')"
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer (got '$RUNS')"
command -v python3 >/dev/null || die "python3 is required (input generator and timer)"

# ---------------------------------------------------------------- work dir and cleanup
if [ -n "${W:-}" ]; then
  W_MINE=0
  mkdir -p "$W"
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/offload-bench.XXXXXX")
  W_MINE=1
fi
W=$(cd "$W" && pwd)
if [ -n "${IN:-}" ]; then IN_MINE=0; else IN=$W/in; IN_MINE=1; fi
mkdir -p "$IN" "$W/out" "$W/raw"
IN=$(cd "$IN" && pwd)
TSV=${BENCH_TSV:-$W/bench.tsv}
LINKS=$W/bin
BASE_LINKS=$W/bin-baseline

cleanup() {
  local rc=$?
  if [ "$KEEP" = 1 ]; then
    log "kept $W"
  elif [ "$W_MINE" = 1 ] && [ "$IN_MINE" = 1 ]; then
    rm -rf "$W"
  else
    [ "$IN_MINE" = 1 ] && rm -rf "$IN"
    rm -rf "$W/out" "$LINKS" "$BASE_LINKS"
    [ "$W_MINE" = 1 ] && rm -rf "$W"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- the groups and their tools
# Each file of scripts/bench/ holds one part: the timer, the rows, the
# inputs, then the groups (step_NAME and NEEDS_NAME), sourced in this order.
# A new group goes into a file of its own there, sourced here.
# shellcheck source=scripts/bench/timer.sh
. "$ROOT/scripts/bench/timer.sh"
# shellcheck source=scripts/bench/rows.sh
. "$ROOT/scripts/bench/rows.sh"
# shellcheck source=scripts/bench/inputs.sh
. "$ROOT/scripts/bench/inputs.sh"
# shellcheck source=scripts/bench/offload_binary.sh
. "$ROOT/scripts/bench/offload_binary.sh"
# shellcheck source=scripts/bench/bundler.sh
. "$ROOT/scripts/bench/bundler.sh"
# shellcheck source=scripts/bench/wrapper.sh
. "$ROOT/scripts/bench/wrapper.sh"
# shellcheck source=scripts/bench/scan.sh
. "$ROOT/scripts/bench/scan.sh"
# shellcheck source=scripts/bench/goals.sh
. "$ROOT/scripts/bench/goals.sh"
# shellcheck source=scripts/bench/lz4.sh
. "$ROOT/scripts/bench/lz4.sh"
# shellcheck source=scripts/bench/real_libs.sh
. "$ROOT/scripts/bench/real_libs.sh"
# shellcheck source=scripts/bench/installs.sh
. "$ROOT/scripts/bench/installs.sh"
# shellcheck source=scripts/bench/images.sh
. "$ROOT/scripts/bench/images.sh"
# shellcheck source=scripts/bench/wheels.sh
. "$ROOT/scripts/bench/wheels.sh"
# shellcheck source=scripts/bench/squashfs.sh
. "$ROOT/scripts/bench/squashfs.sh"
# shellcheck source=scripts/bench/split.sh
. "$ROOT/scripts/bench/split.sh"

# ================================================================ main
check_llvm
log "work dir $W; STEPS=\"$STEPS\" SIZES=\"$SIZES\" RUNS=$RUNS; LLVM $LLVM_VERSION in $LLVM"
build_ours
for step in $STEPS; do
  "step_$step"
done
print_table
if [ "$KEEP" = 1 ] || [[ $TSV != "$W"/* ]] || [ "$W_MINE" = 0 ]; then
  echo "TSV: $TSV"
else
  echo "TSV: $TSV (removed with the work dir: set BENCH_TSV=path or KEEP=1 to keep it)"
fi
if [ "$FAILURES" -gt 0 ]; then
  log "$FAILURES failure(s): see the notes above"
  exit 1
fi
