# shellcheck shell=bash
# scripts/bench/squashfs.sh, sourced by scripts/bench.sh: the group squashfs.
# A squashfs image (issue #73) of more than 1 GB made of the real libraries
# scripts/real-libs.sh caches: three application directories, each with
# Debian's rocBLAS installed (librocblas, 13 AMD GPUs, and its Tensile
# files, one GPU's code each), librocrand (HIP, seven AMD GPUs) and
# libcurand (cuRAND, eight SM versions), 7.3 GB of files, packed by
# `mksquashfs -comp lz4 -b 128K -no-duplicates` into a 1.9 GB image (each
# copy stored, as distinct libraries would be). `prune --keep gfx1030 -o` of it against
# what a user does by hand: `unsquashfs` of the image, `rm` of the other
# GPUs' files (a find over names holding `gfx` but not `gfx1030`) and
# `mksquashfs` with the same compressor, block size and options (its
# libraries keep every GPU's code, so its image is larger and less slim).
# Goals: ours <= 0.5x its time, peak RSS <= 512 MiB; `unsquashfs -s` of ours
# gives the same compressor and block size, its listing is the image's
# without the other GPUs' files, and its librocrand is the library pruned
# alone. The image is made once and kept in
# ${OFFLOAD_KIT_CACHE:-/var/cache/offload-kit}/bench. Not in the default
# STEPS (the rocBLAS download, 10 GB of disk in W): STEPS=squashfs.
NEEDS_squashfs=""
# How the image is made, and the manual route's image too.
SQUASHFS_OPTS=(-comp lz4 -b 131072 -no-duplicates)

# squashfs_image: prints the path of the cached image, making it first if
# it is missing (about a minute on 2 CPUs).
squashfs_image() {
  local cache dir img tree
  cache=$(bash "$ROOT/scripts/real-libs.sh") || die "scripts/real-libs.sh failed"
  bash "$ROOT/scripts/real-libs.sh" --rocblas >/dev/null || die "scripts/real-libs.sh --rocblas failed"
  dir=${OFFLOAD_KIT_CACHE:-/var/cache/offload-kit}/bench
  img=$dir/real-libs-lz4-128k-v1.sqfs
  if [ -s "$img" ]; then
    echo "$img"
    return 0
  fi
  command -v mksquashfs >/dev/null || die "no mksquashfs (scripts/setup.sh installs squashfs-tools)"
  mkdir -p "$dir"
  tree=$(mktemp -d "$W/sqtree.XXXXXX")
  log "making $img"
  (
    set -e
    cd "$tree"
    dpkg-deb -x "$cache/librocrand1_5.3.3-4_amd64.deb" rocrand
    dpkg-deb -x "$cache/librocblas0_5.5.1+dfsg-7_amd64.deb" rocblas
    unzip -q -d curand "$cache/nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl" nvidia/curand/lib/libcurand.so.10
    local i lib
    for i in 1 2 3; do
      # Copies, not hard links: each its own inode.
      lib=root/opt/app$i/lib
      mkdir -p "$lib"
      cp -a rocblas/usr/lib/x86_64-linux-gnu/. "$lib/"
      cp rocrand/usr/lib/x86_64-linux-gnu/librocrand.so.1.1 curand/nvidia/curand/lib/libcurand.so.10 "$lib/"
      ln -s librocrand.so.1.1 "$lib/librocrand.so.1"
    done
    mksquashfs root "$img.part" "${SQUASHFS_OPTS[@]}" -noappend -quiet -no-progress
    mv "$img.part" "$img"
  ) >&2 || { rm -rf "$tree" "$img.part"; die "could not make $img"; }
  rm -rf "$tree"
  echo "$img"
}

step_squashfs() {
  local img O=$W/out/squashfs bytes
  img=$(squashfs_image) || exit 1
  rm -rf "$O" && mkdir -p "$O"
  bytes=$(stat -c %s "$img")
  cat "$img" >/dev/null
  local llvm=(sh -c 'rm -rf "$1" && unsquashfs -q -n -d "$1" "$2" >/dev/null && find "$1" -type f -name "*gfx*" ! -name "*gfx1030*" -delete && o=$1 m=$3 && shift 3 && mksquashfs "$o" "$m" "$@" -noappend -quiet -no-progress' sh "$O/manual" "$img" "$O/manual.sqfs" "${SQUASHFS_OPTS[@]}")
  local ours=("$OURS" prune --keep gfx1030 -o "$O/slim.sqfs" "$img")
  local llvm_rm=("$O/manual.sqfs" "$O/manual") ours_rm=("$O/slim.sqfs")
  bench_row "sqfs.prune.real-libs" "prune an lz4 squashfs of 3 rocBLAS installs, librocrand and libcurand (7.3 GB of files) to gfx1030 (LLVM column: unsquashfs, rm of the other GPUs' files, mksquashfs -comp lz4 -b 128K)" "$bytes" llvm ours
  unset llvm_rm ours_rm
  if ran llvm && ran ours; then
    time_goal "sqfs.prune.real-libs" 0.5 "the manual route's"
    rss_goal "sqfs.prune.real-libs" 512
    row_note "$bytes -> $(stat -c %s "$O/slim.sqfs") bytes, the manual route's $(stat -c %s "$O/manual.sqfs")"
    squashfs_check "$img" "$O"
  fi
  [ "$KEEP" = 1 ] || rm -rf "$O"
}

# squashfs_check IMG O: the row's checks of $O/slim.sqfs against IMG.
squashfs_check() {
  local img=$1 O=$2 want got
  want=$(unsquashfs -s "$img" | grep -E '^(Compression|Block size)')
  got=$(unsquashfs -s "$O/slim.sqfs" | grep -E '^(Compression|Block size)')
  [ "$want" = "$got" ] || row_fail "unsquashfs -s gives other settings: $got"
  unsquashfs -l "$img" | grep '^squashfs-root' | grep -v 'gfx' >"$O/want.list"
  unsquashfs -l "$img" | grep '^squashfs-root.*gfx1030' >>"$O/want.list"
  sort -o "$O/want.list" "$O/want.list"
  unsquashfs -l "$O/slim.sqfs" | grep '^squashfs-root' | sort >"$O/got.list"
  same_file "$O/want.list" "$O/got.list" >/dev/null ||
    row_fail "the pruned image lists other entries than the image without the other GPUs' files"
  unsquashfs -q -n -d "$O/lib" "$img" opt/app1/lib/librocrand.so.1.1 >/dev/null
  "$OURS" prune --keep gfx1030 -o "$O/alone.so" "$O/lib/opt/app1/lib/librocrand.so.1.1" >/dev/null
  unsquashfs -cat "$O/slim.sqfs" opt/app1/lib/librocrand.so.1.1 >"$O/in-image.so"
  same_file "$O/alone.so" "$O/in-image.so" >/dev/null ||
    row_fail "the image's librocrand differs from the library pruned alone"
}
