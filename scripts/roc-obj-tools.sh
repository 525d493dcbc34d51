#!/usr/bin/env bash
# Unpacks AMD's roc-obj-ls, roc-obj-extract and roc-obj (Perl scripts from
# Debian bookworm's hipcc 5.2.3), the references of offload-kit's drop-ins
# under those names (linker-tests/roc_obj.rs). Nothing is installed: the
# package is fetched with `apt-get download` and only the three scripts are
# copied out of it, into DIR/bin. They run with the system's perl, GNU
# objdump and dd, File::Which and URI::Encode (scripts/setup.sh installs
# libfile-which-perl and liburi-encode-perl). The package comes through a
# private apt configuration for bookworm's main (scripts/apt-fetch.sh: its
# own lists and cache under a scratch folder).
#
#   bash scripts/roc-obj-tools.sh [DIR]   # default /opt/offload-kit/roc-obj
#
# Does nothing when DIR already holds them (the marker file DIR/.complete
# records the package version: a version changed here unpacks again).
set -euo pipefail

DIR=${1:-/opt/offload-kit/roc-obj}
PKG=hipcc
VERSION=5.2.3-8
SCRIPTS=(roc-obj-ls roc-obj-extract roc-obj)
STAMP="$PKG=$VERSION ${SCRIPTS[*]}"

if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "roc-obj-tools: $DIR is ready"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/apt-fetch.sh"
deb=$(apt_fetch "$work" bookworm main "$PKG=$VERSION")
dpkg-deb -x "$deb" "$work/root"

rm -rf "$DIR.partial"
mkdir -p "$DIR.partial/bin"
for s in "${SCRIPTS[@]}"; do
  src=$(find "$work/root" -name "$s" -type f | head -n 1)
  if [ -z "$src" ]; then
    echo "roc-obj-tools: $s is not in $(basename "$deb")" >&2
    exit 1
  fi
  install -m 0755 "$src" "$DIR.partial/bin/$s"
done
printf '%s\n' "$STAMP" >"$DIR.partial/.complete"
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
echo "roc-obj-tools: $DIR is ready"
