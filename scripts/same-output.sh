#!/usr/bin/env bash
# Checks that two builds of offload-kit give the same bytes: every `--json`
# document, text listing, exit code and message of the reading commands, and
# the files `prune -o` and `extract` write, over the shipped fixtures and the
# real packages scripts/real-libs.sh caches. For moves that must not change
# behaviour (issue #58): build the old commit in a worktree and name both
# binaries.
#
#   scripts/same-output.sh OLD_BINARY NEW_BINARY [FILE_OR_DIR...]
#
# Without files it reads fixtures/ (each fuzz corpus as one tree) and /var/cache/offload-kit/real-libs.
# Exit 0 when every output is identical, 1 listing the ones that differ.
set -uo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
shift 2
cd "$(dirname "${BASH_SOURCE[0]}")/.."
inputs=("$@")
if [ ${#inputs[@]} -eq 0 ]; then
  # The fuzz corpora (thousands of hostile files) as one tree each.
  mapfile -t inputs < <(find fixtures -type f -not -path 'fixtures/fuzz/*' | sort;
    find fixtures/fuzz -mindepth 1 -maxdepth 1 -type d | sort)
  [ -d /var/cache/offload-kit/real-libs ] &&
    mapfile -t -O ${#inputs[@]} inputs < <(find /var/cache/offload-kit/real-libs -maxdepth 1 -type f | sort)
fi
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

# One command line run by both binaries: stdout, stderr (the binary's path
# replaced) and the exit code must match, and so must every file written
# under the output directory the placeholder OUT names.
differ=0 runs=0
same() {
  local tag
  for tag in old new; do
    local bin=$old
    [ $tag = new ] && bin=$new
    rm -rf "$w/$tag" && mkdir -p "$w/$tag/out"
    local args=("${@//OUT/$w/$tag/out}")
    (cd "$w/$tag" && "$bin" "${args[@]}" >stdout 2>stderr; echo $? >rc)
    sed -i "s#$w/$tag#W#g; s#$bin#BIN#g" "$w/$tag/stdout" "$w/$tag/stderr"
  done
  runs=$((runs + 1))
  if ! diff -r "$w/old" "$w/new" >"$w/diff" 2>&1; then
    differ=$((differ + 1))
    echo "differs: $*"
    head -20 "$w/diff" | sed 's/^/  /'
  fi
}

for f in "${inputs[@]}"; do
  f=$(realpath "$f")
  same inspect --json "$f"
  same inspect "$f"
  same list --json "$f"
  same size --json "$f"
  same check --json --require-arch sm_80 "$f"
  same extract -o OUT/x "$f"
  same prune --keep gfx90a,sm_80 --json -d OUT/pruned "$f"
done
# diff pairs: each input against the next one.
for ((i = 1; i < ${#inputs[@]}; i++)); do
  same diff --json "$(realpath "${inputs[i-1]}")" "$(realpath "${inputs[i]}")"
done
echo "same-output: $runs command lines, $differ differ"
[ $differ -eq 0 ]
