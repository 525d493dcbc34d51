# shellcheck shell=bash
# scripts/bench/offload_binary.sh, sourced by scripts/bench.sh: the groups startup and offload_binary.
# ================================================================ groups
# Fixed cost: start-up of each tool, our compat front end vs LLVM's.
step_startup() {
  local llvm=("$LLVM/llvm-offload-binary" --version)
  local ours=("$LINKS/llvm-offload-binary" --version)
  bench_row startup.offload-binary "startup: llvm-offload-binary --version" 0 llvm ours
}

# OffloadBinary (llvm-offload-binary / clang-offload-packager), per SIZES entry:
# pack 4 images, extract the last one, extract all 4, and list (ours only).
# Extraction reads LLVM's pack on both sides, so both read the same bytes.
ARCHS=(gfx90a gfx942 gfx1100 gfx1201)
TRIPLE=amdgcn-amd-amdhsa

step_offload_binary() {
  local s k first=1
  make_inputs
  for s in "${SIZE_LIST[@]}"; do
    local I=$IN/s$((4 * s))M O=$W/out/ob.$s tag=4x${s}MiB
    mkdir -p "$O"
    local specs=() imgs=() xl=() xo=()
    for k in 0 1 2 3; do
      imgs+=("$I/img$k.bin")
      specs+=("--image=file=$I/img$k.bin,triple=$TRIPLE,arch=${ARCHS[k]},kind=openmp")
      xl+=("--image=file=$O/llvm.x$k.o,arch=${ARCHS[k]}")
      xo+=("--image=file=$O/ours.x$k.o,arch=${ARCHS[k]}")
    done
    local bytes=0 f
    for f in "${imgs[@]}"; do bytes=$((bytes + $(stat -c %s "$f"))); done
    cat "${imgs[@]}" >/dev/null

    local llvm=("$LLVM/llvm-offload-binary" -o "$O/llvm.pack" "${specs[@]}")
    local ours=("$LINKS/llvm-offload-binary" -o "$O/ours.pack" "${specs[@]}")
    local llvm_rm=("$O/llvm.pack") ours_rm=("$O/ours.pack")
    bench_row "ob.pack.$tag" "pack $tag" "$bytes" llvm ours
    local why
    if ran llvm && ran ours; then
      if why=$(same_file "$O/llvm.pack" "$O/ours.pack"); then
        row_note "pack byte-identical to LLVM's"
      else
        row_fail "pack differs from LLVM's: $why"
      fi
    fi
    rm -f "$O/ours.pack"

    # The other tool name, for the first size only: same code, same bytes.
    if [ $first = 1 ]; then
      first=0
      llvm=("$LLVM/clang-offload-packager" -o "$O/llvm.cop.pack" "${specs[@]}")
      ours=("$LINKS/clang-offload-packager" -o "$O/ours.cop.pack" "${specs[@]}")
      llvm_rm=("$O/llvm.cop.pack") ours_rm=("$O/ours.cop.pack")
      bench_row "ob.pack-as-clang-offload-packager.$tag" "pack $tag as clang-offload-packager" "$bytes" llvm ours
      if ran llvm && ran ours; then
        if why=$(same_file "$O/llvm.cop.pack" "$O/ours.cop.pack"); then
          row_note "pack byte-identical to LLVM's"
        else
          row_fail "pack differs from LLVM's: $why"
        fi
      fi
      rm -f "$O"/*.cop.pack
    fi
    [ -f "$O/llvm.pack" ] || { log "no LLVM pack; skipping the other $tag rows"; continue; }

    llvm=("$LLVM/llvm-offload-binary" "$O/llvm.pack" "--image=file=$O/llvm.x.o,arch=${ARCHS[3]}")
    ours=("$LINKS/llvm-offload-binary" "$O/llvm.pack" "--image=file=$O/ours.x.o,arch=${ARCHS[3]}")
    llvm_rm=("$O/llvm.x.o") ours_rm=("$O/ours.x.o")
    bench_row "ob.extract1.$tag" "extract 1 of 4 ($s MiB) from $tag" "$bytes" llvm ours
    if ran ours; then
      check_extracted "$O/llvm.x.o" "$O/ours.x.o" "${imgs[3]}" && row_note "image intact"
    fi
    rm -f "$O"/*.x.o

    llvm=("$LLVM/llvm-offload-binary" "$O/llvm.pack" "${xl[@]}")
    ours=("$LINKS/llvm-offload-binary" "$O/llvm.pack" "${xo[@]}")
    llvm_rm=("${xl[@]#--image=file=}") ours_rm=("${xo[@]#--image=file=}")
    llvm_rm=("${llvm_rm[@]%%,*}") ours_rm=("${ours_rm[@]%%,*}")
    bench_row "ob.extractAll.$tag" "extract all 4 from $tag" "$bytes" llvm ours
    if ran ours; then
      local bad=0
      for k in 0 1 2 3; do
        check_extracted "$O/llvm.x$k.o" "$O/ours.x$k.o" "${imgs[k]}" || bad=1
      done
      [ $bad = 1 ] || row_note "4 images intact"
    fi
    rm -f "$O"/*.x?.o

    unset llvm_rm ours_rm
    ours=("$OURS" list "$O/llvm.pack")
    bench_row "ob.list.$tag" "offload-kit list $tag (LLVM: none)" "$bytes" "" ours
    if ran ours; then
      local n
      n=$(grep -c -F -e "${ARCHS[0]}" -e "${ARCHS[1]}" -e "${ARCHS[2]}" -e "${ARCHS[3]}" \
        "$W/raw/ob.list.$tag.ours.stdout" || true)
      if [ "$n" -ge 4 ]; then
        row_note "lists the 4 archs"
      else
        row_fail "list output does not show the 4 archs"
      fi
    fi

    [ "$KEEP" = 1 ] || rm -rf "$O"
  done
}
