#!/usr/bin/env bash
# Checks that every external tool and library the tests and the demo use
# (scripts/tools.txt) comes from a Debian package that scripts/setup.sh
# installs, directly or through its Depends (recommends do not count: setup
# installs with --no-install-recommends). A tool that only a hand install
# provides fails the run with a line naming the tool and its package.
#
#   bash scripts/check-packages.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LLVM_BIN=/usr/lib/llvm-22/bin
# The packages setup.sh installs, as it lists them rather than repeated.
mapfile -t pkgs < <(bash scripts/setup.sh --list-packages)
[ ${#pkgs[@]} -gt 0 ] || { echo "check-packages: scripts/setup.sh --list-packages listed nothing" >&2; exit 1; }

# Every package those pull in through Depends and PreDepends. apt-cache
# needs the package lists: fetch them once if this machine has none.
depends() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${pkgs[@]}" 2>/dev/null
}
if ! depends | grep -q . && [ "$(id -u)" = 0 ]; then
  apt-get update -q >/dev/null
fi
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${pkgs[@]}" 2>/dev/null |
  sed -n 's/^ *|\{0,1\}\(Pre\)\{0,1\}Depends: //p; /^[^ ]/p' | sed 's/[<>]//g; s/:.*$//' | sort -u)
[ -n "$closure" ] || { echo "check-packages: apt-cache depends found nothing (run apt-get update)" >&2; exit 1; }

# The package that owns a path: the path itself, where the symlinks lead
# (/usr/bin/cc through the alternatives), or its name before the /usr merge
# (dpkg knows bash as /bin/bash).
owner() {
  local p=$1 o="" c
  for c in "$p" "$(readlink -f "$p")" "${p#/usr}"; do
    [ -n "$o" ] || o=$(dpkg -S "$c" 2>/dev/null | grep -v '^diversion ' | head -n 1) || true
  done
  printf '%s' "${o%%: *}" | sed 's/:[a-z0-9]*$//'
}

SYSROOT_ARM64=/opt/offload-kit/sysroot-arm64
CUDA_TOOLS=/opt/offload-kit/cuda-tools
NVPRUNE_TOOL=/opt/offload-kit/nvprune
WHEEL_TOOLS=/opt/offload-kit/maturin
CONDA_TOOLS=/opt/offload-kit/conda-tools
VARIANT_TOOLS=/opt/offload-kit/variant-tools
ROC_OBJ=/opt/offload-kit/roc-obj
fail=0
checked=0
while read -r tool; do
  case $tool in '' | '#'*) continue ;; esac
  if [[ $tool == /* ]]; then
    path=$tool
  elif [ -e "$LLVM_BIN/$tool" ]; then
    path=$LLVM_BIN/$tool
  else
    path=/usr/bin/$tool
  fi
  if [ ! -e "$path" ]; then
    echo "check-packages: $tool: $path does not exist" >&2
    fail=1
    continue
  fi
  # The arm64 sysroot is unpacked by scripts/arm64-sysroot.sh (setup.sh
  # runs it), not installed: its files belong to no package here.
  if [[ $path == "$SYSROOT_ARM64"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  # NVIDIA's CUDA tools come from PyPI wheels (scripts/cuda-tools.sh, which
  # setup.sh runs): no Debian package has them.
  if [[ $path == "$CUDA_TOOLS"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  # nvprune is unpacked from a Debian package that is downloaded, not
  # installed (scripts/nvprune-tool.sh, which setup.sh runs): dpkg knows
  # no owner for it.
  if [[ $path == "$NVPRUNE_TOOL"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  # maturin and auditwheel are installed from PyPI into a venv of their own
  # (scripts/wheel-tools.sh, which setup.sh runs).
  if [[ $path == "$WHEEL_TOOLS"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  # So are cph and py-rattler (scripts/conda-tools.sh, which setup.sh runs).
  if [[ $path == "$CONDA_TOOLS"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  # So are variantlib, uv and pip (scripts/variant-tools.sh).
  if [[ $path == "$VARIANT_TOOLS"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  # So are AMD's roc-obj scripts (scripts/roc-obj-tools.sh unpacks them
  # from hipcc's .deb without installing it).
  if [[ $path == "$ROC_OBJ"/* ]]; then
    checked=$((checked + 1))
    continue
  fi
  pkg=$(owner "$path")
  if [ -z "$pkg" ]; then
    echo "check-packages: $tool: $path belongs to no package (installed by hand?)" >&2
    fail=1
  elif ! grep -qx -- "$pkg" <<<"$closure"; then
    echo "check-packages: $tool: $path comes from package $pkg, which scripts/setup.sh neither installs nor pulls in" >&2
    fail=1
  fi
  checked=$((checked + 1))
done <scripts/tools.txt

[ $fail = 0 ] || exit 1
echo "check-packages: all $checked tools come from packages that scripts/setup.sh installs"
