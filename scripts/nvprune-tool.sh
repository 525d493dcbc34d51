#!/usr/bin/env bash
# Unpacks NVIDIA's nvprune 11.8, the reference for offload-kit's `nvprune`
# drop-in (linker-tests/nvprune.rs). No PyPI wheel ships nvprune: it comes
# from Debian bookworm's non-free `nvidia-cuda-toolkit` package, which is
# downloaded (`apt-get download`) through a private apt configuration
# (scripts/apt-fetch.sh: bookworm's non-free component, its package lists
# and cache under a scratch folder, so the system's apt state is left
# alone) and of which only usr/bin/nvprune is unpacked
# (`dpkg-deb -x`), into DIR/bin. Nothing is installed. nvprune runs on the
# CPU; no GPU or driver is needed.
#
#   bash scripts/nvprune-tool.sh [DIR]   # default /opt/offload-kit/nvprune
#
# Does nothing when DIR already holds it (the marker file DIR/.complete,
# which records the package version: a version changed here unpacks again).
set -euo pipefail

DIR=${1:-/opt/offload-kit/nvprune}
PKG=nvidia-cuda-toolkit
VERSION=11.8.89~11.8.0-5~deb12u1
STAMP="$PKG=$VERSION"

if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "nvprune-tool: $DIR is ready"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/apt-fetch.sh"
deb=$(apt_fetch "$work" "bookworm bookworm-updates" non-free "$PKG=$VERSION")
mkdir -p "$work/x"
dpkg-deb -x "$deb" "$work/x"
rm -rf "$DIR.partial"
mkdir -p "$DIR.partial/bin"
install -m 0755 "$work/x/usr/bin/nvprune" "$DIR.partial/bin/nvprune"
"$DIR.partial/bin/nvprune" --version >/dev/null 2>&1 || {
  echo "nvprune-tool: nvprune from $PKG does not run" >&2
  exit 1
}
printf '%s\n' "$STAMP" >"$DIR.partial/.complete"
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
echo "nvprune-tool: $DIR is ready ($(du -sm "$DIR" | cut -f1) MB)"
