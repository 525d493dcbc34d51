#!/usr/bin/env bash
# Installs what scripts/wheel.sh builds and checks the wheels with, from
# PyPI, into a virtual environment of its own (Debian's python3 -m venv):
# maturin, which builds the wheel, and auditwheel, which checks that it
# needs no library a manylinux system may lack. The versions are pinned,
# the packages they pull in too.
#
#   bash scripts/wheel-tools.sh [DIR]   # default /opt/offload-kit/maturin
#
# Does nothing when DIR already holds them (the marker file DIR/.complete
# records the pins: a pin changed here installs again).
set -euo pipefail

DIR=${1:-/opt/offload-kit/maturin}
REQS=(
  maturin==1.16.0
  auditwheel==6.8.2
  pyelftools==0.33
  packaging==26.3
)
STAMP=$(printf '%s\n' "${REQS[@]}")

if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "wheel-tools: $DIR is ready"
  exit 0
fi

# The marker is written last: a run cut short leaves none, and the next
# run starts again. (A venv names its interpreter by path in its scripts,
# so it is made where it stays, not moved there.)
rm -rf "$DIR"
/usr/bin/python3 -m venv "$DIR"
"$DIR/bin/python" -m pip install -q --disable-pip-version-check \
  --only-binary=:all: "${REQS[@]}" >/dev/null
for t in maturin auditwheel; do
  "$DIR/bin/$t" --version >/dev/null || {
    echo "wheel-tools: $t does not run" >&2
    exit 1
  }
done
printf '%s\n' "$STAMP" >"$DIR/.complete"
echo "wheel-tools: $DIR is ready ($("$DIR/bin/maturin" --version), auditwheel $("$DIR/bin/auditwheel" --version | head -n 1 | awk '{print $2}'))"
