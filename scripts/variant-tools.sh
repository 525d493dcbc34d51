#!/usr/bin/env bash
# Installs the tools that check split's wheel variants (PEP 825; issue #74)
# from PyPI, into a virtual environment of their own (Debian's python3 -m
# venv): variantlib, which validates a wheel's variant.json and an index's
# {name}-{version}-variants.json and resolves variants through provider
# plugins, uv, which installs variant wheels from an index under
# `--preview-features wheel-variants` with NVIDIA's provider built in,
# and pip, which reads the per-GPU PEP 503 indexes and no variants.
# No provider plugin is installed: neither NVIDIA's nor AMD's is on PyPI
# (nvidia-variant-provider there is an empty 0.0.0a0 placeholder), so the
# tests bring a stand-in of their own where variantlib needs one. The
# versions are pinned, and so are the packages they pull in.
#
#   bash scripts/variant-tools.sh [DIR]   # default /opt/offload-kit/variant-tools
#
# Does nothing when DIR already holds them (DIR/.complete records the
# pins: a pin changed here installs again).
set -euo pipefail

DIR=${1:-/opt/offload-kit/variant-tools}
REQS=(
  variantlib==0.2.2
  uv==0.13.8
  packaging==26.4
  platformdirs==4.14.8
  build==1.2.2.post1
  pyproject_hooks==1.3.3
  tomlkit==0.13.3
  tzlocal==5.4.5
  pip==26.3
)
STAMP=$(printf '%s\n' "${REQS[@]}")

if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "variant-tools: $DIR is ready"
  exit 0
fi

# The marker goes in last, so that a run cut short is begun again; the
# venv is made where it stays (its scripts name their interpreter by path).
rm -rf "$DIR"
/usr/bin/python3 -m venv "$DIR"
"$DIR/bin/python" -m pip install -q --disable-pip-version-check \
  --only-binary=:all: --no-deps "${REQS[@]}" >/dev/null
"$DIR/bin/variantlib" --version >/dev/null || {
  echo "variant-tools: variantlib does not run" >&2
  exit 1
}
"$DIR/bin/uv" --version >/dev/null || {
  echo "variant-tools: uv does not run" >&2
  exit 1
}
printf '%s\n' "$STAMP" >"$DIR/.complete"
echo "variant-tools: $DIR is ready (variantlib $("$DIR/bin/variantlib" --version 2>&1 | awk '{print $NF}'), $("$DIR/bin/uv" --version))"
