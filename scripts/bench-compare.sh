#!/usr/bin/env bash
# Two builds of offload-kit on scripts/bench.sh's rows, in one run: for each
# bench group the old binary's rows, then the new one's, on the same inputs,
# so that load and page cache are alike. Prints, per row, both medians and
# new/old, and fails when a row of the new binary is slower than LIMIT (default
# 1.05: the ±5 % of issue #58) and slower by more than FLOOR seconds (default
# 0.005: below it a whole-process time is start-up noise).
#
#   scripts/bench-compare.sh OLD_BINARY NEW_BINARY
#
# Each group is run ROUNDS times (default 2), the two binaries in turn and
# in the other order each round (old new, new old, ...), and a row's time is
# the lowest of its medians: a load that comes or goes during the run then
# weighs on both sides alike.
#
# Environment: STEPS, SIZES, RUNS as bench.sh takes them (defaults: bench.sh's
# default groups, SIZES="4 256", RUNS=5); ROUNDS; LIMIT, FLOOR; W (work dir,
# default mktemp -d).
set -euo pipefail
[ $# -eq 2 ] || { sed -n 2,19p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STEPS=${STEPS:-"startup offload_binary bundler wrapper scan scan_tree"}
ROUNDS=${ROUNDS:-2}
LIMIT=${LIMIT:-1.05}
FLOOR=${FLOOR:-0.005}
W=${W:-$(mktemp -d)}
mkdir -p "$W/in"
for step in $STEPS; do
  for round in $(seq 1 "$ROUNDS"); do
    order="old new"
    [ $((round % 2)) = 0 ] && order="new old"
    for side in $order; do
      bin=$old
      [ $side = new ] && bin=$new
      tsv=$W/$side.$step.$round.tsv dir=$W/$side.$step
      STEPS=$step OFFLOAD_KIT=$bin IN=$W/in W=$dir BENCH_TSV=$tsv \
        bash "$ROOT/scripts/bench.sh" >"$W/$side.$step.$round.log" 2>&1 ||
        { tail -20 "$W/$side.$step.$round.log"; echo "bench-compare: bench.sh failed ($side, $step, round $round)"; exit 1; }
    done
  done
done
python3 - "$W" "$LIMIT" "$FLOOR" "$ROUNDS" $STEPS <<'EOF'
import csv, sys
w, limit, floor, rounds, steps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
def rows(side, step):
    """Each row of every round, with the lowest of its medians."""
    best = {}
    for r in range(1, rounds + 1):
        with open(f"{w}/{side}.{step}.{r}.tsv") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                old = best.get(row["id"])
                try:
                    if old is None or float(row["ours_wall_med"]) < float(old["ours_wall_med"]):
                        best[row["id"]] = row
                except ValueError:
                    best.setdefault(row["id"], row)
    return best
slower = 0
print(f"{'row':<48} {'old s':>9} {'new s':>9} {'new/old':>8} {'old MiB':>8} {'new MiB':>8}")
for step in steps:
    old, new = rows("old", step), rows("new", step)
    for rid, o in old.items():
        n = new.get(rid)
        try:
            a, b = float(o["ours_wall_med"]), float(n["ours_wall_med"])
        except (TypeError, ValueError):  # a row not run (n/a) on a side
            continue
        ratio = b / a if a > 0 else float("inf")
        bad = ratio > limit and b - a > floor
        slower += bad
        print(f"{rid:<48} {a:9.4f} {b:9.4f} {ratio:8.3f} {o['ours_peak_MiB']:>8} {n['ours_peak_MiB']:>8}"
              + ("  SLOWER" if bad else ""))
print(f"bench-compare: {slower} row(s) slower than {limit}x (and by more than {floor} s)")
sys.exit(1 if slower else 0)
EOF
