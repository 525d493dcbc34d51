#!/usr/bin/env bash
# Installs what the tests of conda packages build, unpack and install them
# with, from PyPI, into a virtual environment of their own (Debian's
# python3 -m venv): conda-package-handling (`cph create`, `cph extract`),
# which makes `.conda` and `.tar.bz2` packages of a directory and reads
# them back, and py-rattler (the rattler crates' Python face), which
# installs a package file into a prefix with no channel. The versions are
# pinned, and so are the packages they pull in.
#
#   bash scripts/conda-tools.sh [DIR]   # default /opt/offload-kit/conda-tools
#
# Does nothing when DIR already holds them (DIR/.complete records the
# pins: a pin changed here installs again).
set -euo pipefail

DIR=${1:-/opt/offload-kit/conda-tools}
REQS=(
  conda-package-handling==2.6.0
  conda_package_streaming==0.13.0
  backports.zstd==1.8.0
  py-rattler==0.28.0
  requests==2.34.2
  certifi==2026.10.19.post1
  charset-normalizer==3.5.3
  idna==3.20
  urllib3==2.8.0
)
STAMP=$(printf '%s\n' "${REQS[@]}")

if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "conda-tools: $DIR is ready"
  exit 0
fi

# The marker goes in last, so that a run cut short is begun again; the
# venv is made where it stays (its scripts name their interpreter by path).
rm -rf "$DIR"
/usr/bin/python3 -m venv "$DIR"
"$DIR/bin/python" -m pip install -q --disable-pip-version-check \
  --only-binary=:all: --no-deps "${REQS[@]}" >/dev/null
"$DIR/bin/cph" --version >/dev/null || {
  echo "conda-tools: cph does not run" >&2
  exit 1
}
"$DIR/bin/python" -c 'import rattler' || {
  echo "conda-tools: py-rattler does not import" >&2
  exit 1
}
printf '%s\n' "$STAMP" >"$DIR/.complete"
echo "conda-tools: $DIR is ready ($("$DIR/bin/cph" --version), py-rattler $("$DIR/bin/python" -c 'import importlib.metadata as m; print(m.version("py-rattler"))'))"
