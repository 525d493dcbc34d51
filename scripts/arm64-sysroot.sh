#!/usr/bin/env bash
# Makes a sysroot holding Debian's arm64 LLVM 22 offloading runtime
# (liboffload-22, libomp-22-dev and what they link against), for running
# aarch64 OpenMP programs under qemu-aarch64 with the real libomptarget.
# Nothing foreign is installed: the packages are downloaded
# (`apt-get download`) and unpacked with `dpkg-deb -x`.
#
#   bash scripts/arm64-sysroot.sh [DIR]   # default /opt/offload-kit/sysroot-arm64
#
# Adds the arm64 architecture to dpkg's list (so apt can download its
# packages) and runs apt-get update once when it does. Does nothing when DIR
# already holds a complete sysroot (the marker file DIR/.complete).
set -euo pipefail

DIR=${1:-/opt/offload-kit/sysroot-arm64}
PKGS=(liboffload-22 libomp-22-dev libllvm22 libomp5-19 libc6 libedit2 libffi8 libgcc-s1
  libstdc++6 libxml2 libz3-4 libzstd1 zlib1g libbsd0 libtinfo6 libicu72 liblzma5 libmd0)

if [ -e "$DIR/.complete" ]; then
  echo "arm64-sysroot: $DIR is ready"
  exit 0
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  if [ "$(id -u)" != 0 ]; then
    echo "arm64-sysroot: dpkg lacks the arm64 architecture; run as root to add it" >&2
    exit 1
  fi
  dpkg --add-architecture arm64
  apt-get update -q >/dev/null
fi
if ! apt-cache show liboffload-22:arm64 >/dev/null 2>&1; then
  apt-get update -q >/dev/null
fi

work=$(mktemp -d)
# apt downloads as the user _apt, which must be able to write there.
chown _apt "$work" 2>/dev/null || true
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -q "${PKGS[@]/%/:arm64}" >/dev/null)
rm -rf "$DIR.partial"
mkdir -p "$DIR.partial"
for deb in "$work"/*.deb; do
  dpkg-deb -x "$deb" "$DIR.partial"
done
# libomptarget has no unversioned name without the -dev package's link.
lib=$DIR.partial/usr/lib/llvm-22/lib
if [ ! -e "$lib/libomptarget.so" ]; then
  target=$(cd "$lib" && ls libomptarget.so.22* | head -n 1)
  ln -s "$target" "$lib/libomptarget.so"
fi
touch "$DIR.partial/.complete"
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
echo "arm64-sysroot: $DIR is ready ($(du -sm "$DIR" | cut -f1) MB)"
