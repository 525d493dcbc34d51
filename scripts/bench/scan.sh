# shellcheck shell=bash
# scripts/bench/scan.sh, sourced by scripts/bench.sh: the groups scan and scan_tree.
# Scanners (offload-kit inspect / extract / check), per SIZES entry: a fat
# OpenMP executable with the 4 images (4 OffloadBinaries packed by LLVM,
# wrapped by `offload-kit wrap`, linked by cc; the runtime is not needed to
# link, only to run), listed through its section headers next to
# `llvm-objdump --offloading`; the same executable with its section headers
# stripped (llvm-objcopy --strip-sections), found by the raw scan; a raw scan
# of the 4 images concatenated (no container anywhere: every byte searched),
# with `grep -c -a -F` on the same file as the reference in the LLVM column;
# and extraction of the 4 images next to llvm-offload-binary. (grep runs
# under `sh -c ... || true`: it exits 1 when it counts no match.)
# Peak RSS of the raw-scan rows includes the mapped file's page-cache pages
# (shared, not heap): the scanner's own allocations do not grow with the file.
step_scan() {
  local s k
  make_inputs
  command -v cc >/dev/null || { log "no cc: skipping the scan group"; return 0; }
  for s in "${SIZE_LIST[@]}"; do
    local I=$IN/s$((4 * s))M O=$W/out/scan.$s tag=4x${s}MiB
    mkdir -p "$O"
    local imgs=()
    for k in 0 1 2 3; do imgs+=("$I/img$k.bin"); done
    make_fat_exe "$I" "$O"
    "$LLVM/llvm-objcopy" --strip-sections "$O/fat.exe" "$O/fat.stripped" || die "llvm-objcopy --strip-sections failed"
    cat "${imgs[@]}" >"$O/noise.bin"
    local exe_bytes noise_bytes
    exe_bytes=$(stat -c %s "$O/fat.exe")
    noise_bytes=$(stat -c %s "$O/noise.bin")
    cat "$O/fat.exe" "$O/fat.stripped" "$O/noise.bin" >/dev/null

    local llvm=("$LLVM/llvm-objdump" --offloading "$O/fat.exe")
    local ours=("$OURS" inspect "$O/fat.exe")
    bench_row "scan.inspect.$tag" "inspect $tag executable (section headers)" "$exe_bytes" llvm ours
    scan_check_archs "scan.inspect.$tag"

    llvm=(sh -c 'grep -c -a -F NOT_PRESENT_needle_offload_kit "$1" || true' sh "$O/fat.stripped")
    ours=("$OURS" inspect "$O/fat.stripped")
    bench_row "scan.raw-stripped.$tag" "inspect $tag executable, section headers stripped (raw scan; LLVM column: grep -c -F)" "$exe_bytes" llvm ours
    scan_check_archs "scan.raw-stripped.$tag"

    llvm=(sh -c 'grep -c -a -F NOT_PRESENT_needle_offload_kit "$1" || true' sh "$O/noise.bin")
    ours=("$OURS" inspect --raw "$O/noise.bin")
    bench_row "scan.raw-all.$tag" "raw scan of $tag without containers (every byte; LLVM column: grep -c -F)" "$noise_bytes" llvm ours
    row_note "ours $(mbps "$noise_bytes" "${ROW[scan.raw-all.$tag.ours.med]}") MB/s, grep $(mbps "$noise_bytes" "${ROW[scan.raw-all.$tag.llvm.med]}") MB/s"

    local xl=()
    for k in 0 1 2 3; do
      xl+=("--image=file=$O/llvm.x$k.bin,arch=${ARCHS[k]}")
    done
    llvm=("$LLVM/llvm-offload-binary" "$O/fat.exe" "${xl[@]}")
    ours=("$OURS" extract -o "$O/x" "$O/fat.exe")
    local llvm_rm=("$O"/llvm.x{0,1,2,3}.bin)
    bench_row "scan.extract.$tag" "extract 4 images from $tag executable" "$exe_bytes" llvm ours
    unset llvm_rm
    if ran ours; then
      local bad=0 f
      for k in 0 1 2 3; do
        local got=$O/x/missing
        for f in "$O"/x/*"${ARCHS[k]}"*.bin; do [ -f "$f" ] && got=$f; done
        check_extracted "$O/llvm.x$k.bin" "$got" "${imgs[k]}" || bad=1
      done
      [ $bad = 1 ] || row_note "4 images intact"
    fi
    rm -rf "$O/x" "$O"/llvm.x?.bin

    ours=("$OURS" check "$O/fat.exe" --require-arch "${ARCHS[0]},${ARCHS[3]}")
    bench_row "scan.check.$tag" "check --require-arch on $tag executable (LLVM: none)" "$exe_bytes" "" ours

    [ "$KEEP" = 1 ] || rm -rf "$O"
  done
}

# A whole install tree, as CI scans an unpacked wheel set: TREE_FILES files
# (default 2000; QUICK: 200) of at least TREE_MIB MiB in all (default 1024;
# QUICK: 64): TREE_FAT fat executables (default 16; QUICK: 4), each carrying
# 4 device images of TREE_MIB/TREE_FAT/4 MiB in .llvm.offloading (hard links
# of one file), and shared libraries from the system without device code
# for the rest. `inspect` of the directory (every core, only the files with
# device code shown) against `find -exec llvm-objdump --offloading {} +`.
NEEDS_scan_tree="llvm-offload-binary llvm-objdump"
step_scan_tree() {
  local files mib fat
  if [ "$QUICK" = 1 ]; then
    files=${TREE_FILES:-200} mib=${TREE_MIB:-64} fat=${TREE_FAT:-4}
  else
    files=${TREE_FILES:-2000} mib=${TREE_MIB:-1024} fat=${TREE_FAT:-16}
  fi
  local per=$((mib / fat / 4))
  [ "$per" -ge 1 ] || die "TREE_MIB/TREE_FAT/4 must be at least 1 MiB"
  local SIZE_LIST=("$per")
  make_inputs
  command -v cc >/dev/null || { log "no cc: skipping the scan_tree group"; return 0; }
  local I=$IN/s$((4 * per))M O=$W/out/tree T=$W/out/tree/t k
  rm -rf "$O"
  mkdir -p "$T/bin" "$T/lib"
  make_fat_exe "$I" "$O"
  # Copies, not links: the tree holds as many distinct bytes as it claims.
  for k in $(seq 1 "$fat"); do cp "$O/fat.exe" "$T/bin/fat$k.exe"; done
  # The rest: the system's shared libraries (ELF files without device code),
  # copied in turn until the tree has its files.
  local libs=() n=$fat i=0
  mapfile -t libs < <(find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name '*.so*' -size +8k -size -2M | sort | head -n 400)
  [ ${#libs[@]} -gt 0 ] || die "no shared libraries in /usr/lib/x86_64-linux-gnu"
  while [ "$n" -lt "$files" ]; do
    local l=${libs[i % ${#libs[@]}]}
    mkdir -p "$T/lib/d$((i / 100))"
    cp "$l" "$T/lib/d$((i / 100))/$i-$(basename "$l")"
    i=$((i + 1)) n=$((n + 1))
  done
  local bytes count
  bytes=$(du -sb "$T" | cut -f1)
  count=$(find "$T" -type f | wc -l)
  find "$T" -type f -exec cat {} + >/dev/null
  local tag="${count}files-$((bytes >> 20))MiB"
  local llvm=(sh -c 'find "$1" -type f -exec "$2/llvm-objdump" --offloading {} + >/dev/null 2>&1 || true' sh "$T" "$LLVM")
  local ours=("$OURS" inspect "$T")
  bench_row "scan.tree.$tag" "inspect a tree of $count files, $((bytes >> 20)) MiB (LLVM: find -exec llvm-objdump --offloading)" "$bytes" llvm ours
  if ran ours; then
    local shown
    shown=$(grep -c '^/.*fat[0-9]*\.exe: ' "$W/raw/scan.tree.$tag.ours.stdout" || true)
    if [ "$shown" = "$fat" ] && ! grep -q '/lib/d' "$W/raw/scan.tree.$tag.ours.stdout"; then
      row_note "shows the $fat files with device code, none of the others"
    else
      row_fail "shows $shown of the $fat files with device code (or files without)"
    fi
  fi
  [ "$KEEP" = 1 ] || rm -rf "$O"
}
