# shellcheck shell=bash
# scripts/bench/images.sh, sourced by scripts/bench.sh: the group images.
# Container images (issue #60): an OCI layout made by umoci of two layers,
# the lower one Debian trixie's rocBLAS installed (2.3 GB, code for 13 GPUs),
# the upper one a small file and a whiteout, pruned to gfx1100 into a new
# layout: `prune -o` against what a user does by hand, `umoci unpack` of
# the image, `offload-kit prune --in-place` of the root and `umoci repack`
# into a copy of the layout (the copy made before each run, untimed). Goals:
# ours <= 0.5x its time, peak RSS <= 512 MiB; umoci unpack (which checks
# every digest) must accept our layout, and its root must hold the library
# pruned as `prune` prunes it alone. Not in the default STEPS (the rocBLAS
# download, 8 GB of disk in W): STEPS=images.
NEEDS_images=""
step_images() {
  local cache O=$W/out/images deb bytes lib
  cache=$(bash "$ROOT/scripts/real-libs.sh" --rocblas) || die "scripts/real-libs.sh --rocblas failed"
  deb=$cache/librocblas0_5.5.1+dfsg-7_amd64.deb
  command -v umoci >/dev/null || die "no umoci (scripts/setup.sh installs it)"
  rm -rf "$O" && mkdir -p "$O"
  (
    cd "$O"
    umoci init --layout L
    umoci new --image L:t
    umoci unpack --image L:t b
    dpkg-deb -x "$deb" b/rootfs
    umoci repack --image L:t b
    rm -rf b
    umoci unpack --image L:t b
    echo note >b/rootfs/note.txt
    rm b/rootfs/usr/share/doc/librocblas0/copyright
    umoci repack --image L:t b
    rm -rf b
  ) >/dev/null || die "umoci could not build the image"
  bytes=$(du -sb "$O/L" | cut -f1)
  local llvm=(sh -c 'rm -rf "$1/b" && umoci unpack --image "$1/R:t" "$1/b" && "$2" prune --keep gfx1100 --in-place "$1/b/rootfs" >/dev/null && umoci repack --image "$1/R:t" "$1/b"' sh "$O" "$OURS")
  local llvm_before="rm -rf '$O/R' '$O/b' && cp -a '$O/L' '$O/R' && sync"
  local ours=("$OURS" prune --keep gfx1100 -o "$O/slim" "$O/L")
  local ours_rm=("$O/slim")
  bench_row "img.prune.rocblas-oci" "prune an OCI image of librocblas0 (2 layers, 2.3 GB in the lower) to gfx1100 (LLVM column: umoci unpack, prune --in-place of the root, umoci repack)" "$bytes" llvm ours
  unset llvm_before ours_rm
  if ran llvm && ran ours; then
    time_goal "img.prune.rocblas-oci" 0.5 "umoci's route's"
    rss_goal "img.prune.rocblas-oci" 512
    row_note "layout $bytes -> $(du -sb "$O/slim" | cut -f1) bytes"
    rm -rf "$O/check" "$O/lib"
    if ! umoci unpack --image "$O/slim:t" "$O/check" >/dev/null 2>&1; then
      row_fail "umoci unpack refuses the pruned layout"
    else
      lib=$(cd "$O/check/rootfs" && find . -name 'librocblas.so.*' -type f | head -1)
      mkdir -p "$O/lib"
      dpkg-deb -x "$deb" "$O/lib/root"
      "$OURS" prune --keep gfx1100 -o "$O/lib/alone" "$O/lib/root/$lib" >/dev/null
      same_file "$O/lib/alone" "$O/check/rootfs/$lib" >/dev/null ||
        row_fail "the image's $lib differs from the library pruned alone"
      [ -e "$O/check/rootfs/usr/share/doc/librocblas0/copyright" ] &&
        row_fail "a whited-out file came back"
    fi
  fi
  [ "$KEEP" = 1 ] || rm -rf "$O"
}
