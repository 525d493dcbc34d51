# shellcheck shell=bash
# scripts/bench/installs.sh, sourced by scripts/bench.sh: the group installs.
# Installs (issue #59): Debian trixie's rocBLAS (`librocblas0` 5.5.1: a
# 166 MB .deb, 2.3 GB installed, code for 13 GPUs; scripts/real-libs.sh
# --rocblas) slimmed to gfx1100. The package: `prune -o` against the manual
# route, `dpkg-deb -R`, `rm` of the other GPUs' files (a find over names
# holding `gfx` but not `gfx1100`) and `dpkg-deb -b -Zxz` (the same
# compressor; the manual package keeps the .so whole and its md5sums stale,
# so it is larger and less exact: goal ours <= 1.0x its time, peak RSS <=
# 512 MiB). The installed tree: `prune --in-place` of a fresh copy (made
# before each run, untimed) against `cp -a` of it (goal <= 0.5x). Not in
# the default STEPS (a 166 MB download, 5 GB of disk in W): STEPS=installs.
NEEDS_installs=""
step_installs() {
  local cache O=$W/out/installs deb bytes
  cache=$(bash "$ROOT/scripts/real-libs.sh" --rocblas) || die "scripts/real-libs.sh --rocblas failed"
  deb=$cache/librocblas0_5.5.1+dfsg-7_amd64.deb
  mkdir -p "$O"
  bytes=$(stat -c %s "$deb")
  cat "$deb" >/dev/null
  local llvm=(sh -c 'rm -rf "$1" && dpkg-deb -R "$2" "$1" && find "$1" -type f -name "*gfx*" ! -name "*gfx1100*" -delete && dpkg-deb -Zxz -b "$1" "$3" >/dev/null' sh "$O/manual" "$deb" "$O/manual.deb")
  local ours=("$OURS" prune --keep gfx1100 -o "$O/slim.deb" "$deb")
  local llvm_rm=("$O/manual.deb" "$O/manual") ours_rm=("$O/slim.deb")
  bench_row "inst.prune.rocblas-deb" "prune librocblas0 .deb to gfx1100 (166 MB, 2.3 GB installed; LLVM column: dpkg-deb -R, rm of the other GPUs' files, dpkg-deb -b -Zxz)" "$bytes" llvm ours
  unset llvm_rm ours_rm
  if ran llvm && ran ours; then
    time_goal "inst.prune.rocblas-deb" 1.0 "the manual route's"
    row_note "$(stat -c %s "$O/slim.deb") bytes against the manual route's $(stat -c %s "$O/manual.deb")"
    if ! dpkg-deb --info "$O/slim.deb" >/dev/null; then
      row_fail "dpkg-deb cannot read the pruned package"
    fi
    rss_goal "inst.prune.rocblas-deb" 512
  fi
  rm -rf "$O/manual" "$O/manual.deb" "$O/slim.deb"
  # The installed tree, pruned in place.
  dpkg-deb -x "$deb" "$O/tree"
  bytes=$(du -sb "$O/tree" | cut -f1)
  llvm=(cp -a "$O/tree" "$O/copy")
  ours=("$OURS" prune --keep gfx1100 --in-place "$O/t")
  local llvm_rm=("$O/copy")
  local ours_before="rm -rf '$O/t' && cp -a '$O/tree' '$O/t' && sync"
  bench_row "inst.prune.rocblas-tree" "prune --in-place of librocblas0's installed files to gfx1100 (2.3 GB; LLVM column: cp -a of the tree)" "$bytes" llvm ours
  unset llvm_rm ours_before
  if ran llvm && ran ours; then
    time_goal "inst.prune.rocblas-tree" 0.5 "cp -a's"
    row_note "$bytes -> $(du -sb "$O/t" | cut -f1) bytes"
  fi
  [ "$KEEP" = 1 ] || rm -rf "$O"
}
