#!/usr/bin/env bash
# Two builds of offload-kit on the same real packages, output by output: for
# each package in DIR, the reports (`size`, `inspect`, `check` as text, JSON,
# Markdown, JUnit and HTML) and what `prune -o` writes (for every target set
# in KEEPS), each compared byte for byte between the old binary and the new.
# Shows that a refactor changed no output (issue #72). Prints a line per
# output that differs and a count; exits 1 if any differs.
#
#   scripts/compare-outputs.sh OLD_BINARY NEW_BINARY [DIR]
#
# DIR defaults to the real-library cache the trials fill
# (/var/cache/offload-kit/real-libs). Environment: KEEPS (default
# "sm_80 gfx90a sm_90,sm_80"), W (work dir, default mktemp -d).
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
dir=${3:-/var/cache/offload-kit/real-libs}
KEEPS=${KEEPS:-"sm_80 gfx90a sm_90,sm_80"}
W=${W:-$(mktemp -d)}
differ=0 compared=0

# Runs the binary $1 as "$2" with the rest of the arguments, in $W/$2/,
# keeping its standard output and exit code in files named by $3.
run() {
    local bin=$1 side=$2 tag=$3
    shift 3
    mkdir -p "$W/$side"
    (cd "$W/$side" && "$bin" "$@" >"$tag.out" 2>"$tag.err"; echo $? >"$tag.rc") || true
}

# Compares what both sides left for $1 (their outputs, exit codes and the
# files named after it).
same() {
    local tag=$1 f
    for f in "$W/old/$tag" "$W/old/$tag".*; do
        [ -e "$f" ] || continue
        compared=$((compared + 1))
        if ! cmp -s "$f" "$W/new/${f#"$W/old/"}"; then
            echo "differs: ${f#"$W/old/"}"
            differ=$((differ + 1))
        fi
    done
}

for pkg in "$dir"/*; do
    [ -f "$pkg" ] || continue
    base=$(basename "$pkg")
    for side in old new; do
        bin=$old
        [ $side = new ] && bin=$new
        run "$bin" $side "$base.size" size "$pkg"
        run "$bin" $side "$base.size-json" size --json "$pkg"
        run "$bin" $side "$base.size-md" size --markdown --html "$base.size.html" "$pkg"
        run "$bin" $side "$base.inspect-json" inspect --json "$pkg"
        run "$bin" $side "$base.check" check --forbid sm_50 --require sm_80 --json \
            --junit "$base.check.xml" "$pkg"
        run "$bin" $side "$base.check-md" check --forbid sm_50 --markdown "$pkg"
        for keep in $KEEPS; do
            run "$bin" $side "$base.prune-$keep" prune --keep "$keep" --json \
                -o "$base.pruned-$keep" "$pkg"
        done
    done
    for t in size size-json size-md size.html inspect-json check check.xml check-md; do
        same "$base.$t"
    done
    for keep in $KEEPS; do
        same "$base.prune-$keep"
        same "$base.pruned-$keep"
    done
done
echo "compared $compared outputs: $differ differ"
[ "$differ" -eq 0 ]
