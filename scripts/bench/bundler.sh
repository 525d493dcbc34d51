# shellcheck shell=bash
# scripts/bench/bundler.sh, sourced by scripts/bench.sh: the group bundler, and check_extracted (offload_binary and scan use it too).
# clang-offload-bundler, per SIZES entry, HIP style (a small host file and
# four device images, 4 KiB alignment): bundle, list, unbundle one and all
# (from LLVM's bundle), then compression: LLVM's single-threaded -compress
# against ours in compat mode (goals: byte-identical, peak RSS at most
# 320 MiB whatever the size), zstd's own `zstd -3 --long -T2` on LLVM's
# uncompressed bundle (the reference for the next row), and
# `offload-kit bundle --compress --threads 2` at the same level (zstd 3, LDM;
# goals: at most 1.25x the zstd row's time, peak RSS at most 256 MiB), and
# unbundling the compressed bundle.
HIP_TARGETS=(host-x86_64-unknown-linux-gnu- hipv4-amdgcn-amd-amdhsa--gfx90a hipv4-amdgcn-amd-amdhsa--gfx942 hipv4-amdgcn-amd-amdhsa--gfx1100 hipv4-amdgcn-amd-amdhsa--gfx1201)
step_bundler() {
  local s k
  make_inputs
  for s in "${SIZE_LIST[@]}"; do
    local I=$IN/s$((4 * s))M O=$W/out/bu.$s tag=4x${s}MiB
    mkdir -p "$O"
    printf 'host code object' >"$O/host.bin"
    local ins=(-input="$O/host.bin") imgs=() native=("${HIP_TARGETS[0]}=$O/host.bin") bytes=0
    for k in 0 1 2 3; do
      imgs+=("$I/img$k.bin")
      ins+=(-input="$I/img$k.bin")
      native+=("${HIP_TARGETS[k + 1]}=$I/img$k.bin")
      bytes=$((bytes + $(stat -c %s "$I/img$k.bin")))
    done
    cat "${imgs[@]}" >/dev/null
    local tg
    tg=$(IFS=,; echo "${HIP_TARGETS[*]}")
    local common=(-type=o -bundle-align=4096 "-targets=$tg" "${ins[@]}")

    local llvm=("$LLVM/clang-offload-bundler" "${common[@]}" -output="$O/llvm.hipfb")
    local ours=("$LINKS/clang-offload-bundler" "${common[@]}" -output="$O/ours.hipfb")
    local llvm_rm=("$O/llvm.hipfb") ours_rm=("$O/ours.hipfb")
    bench_row "bu.bundle.$tag" "bundle $tag (HIP style)" "$bytes" llvm ours
    local why
    if ran llvm && ran ours; then
      if why=$(same_file "$O/llvm.hipfb" "$O/ours.hipfb"); then
        row_note "bundle byte-identical to LLVM's"
      else
        row_fail "bundle differs from LLVM's: $why"
      fi
    fi
    rm -f "$O/ours.hipfb"
    [ -f "$O/llvm.hipfb" ] || { log "no LLVM bundle; skipping the other $tag rows"; continue; }

    unset llvm_rm ours_rm
    llvm=("$LLVM/clang-offload-bundler" -type=o -list -input="$O/llvm.hipfb")
    ours=("$LINKS/clang-offload-bundler" -type=o -list -input="$O/llvm.hipfb")
    bench_row "bu.list.$tag" "-list $tag" "$bytes" llvm ours
    if ran ours; then
      if cmp -s "$W/raw/bu.list.$tag.llvm.stdout" "$W/raw/bu.list.$tag.ours.stdout"; then
        row_note "same IDs in the same order"
      else
        row_fail "-list output differs from LLVM's"
      fi
    fi

    llvm=("$LLVM/clang-offload-bundler" -type=o -unbundle -targets="${HIP_TARGETS[2]}" -input="$O/llvm.hipfb" -output="$O/llvm.u1")
    ours=("$LINKS/clang-offload-bundler" -type=o -unbundle -targets="${HIP_TARGETS[2]}" -input="$O/llvm.hipfb" -output="$O/ours.u1")
    llvm_rm=("$O/llvm.u1") ours_rm=("$O/ours.u1")
    bench_row "bu.unbundle1.$tag" "unbundle 1 target from $tag" "$bytes" llvm ours
    if ran ours; then
      check_extracted "$O/llvm.u1" "$O/ours.u1" "${imgs[1]}" && row_note "entry intact"
    fi
    rm -f "$O"/*.u1

    local lo=() oo=()
    for k in 0 1 2 3 4; do lo+=(-output="$O/llvm.ua$k"); oo+=(-output="$O/ours.ua$k"); done
    llvm=("$LLVM/clang-offload-bundler" -type=o -unbundle "-targets=$tg" -input="$O/llvm.hipfb" "${lo[@]}")
    ours=("$LINKS/clang-offload-bundler" -type=o -unbundle "-targets=$tg" -input="$O/llvm.hipfb" "${oo[@]}")
    llvm_rm=("${lo[@]#-output=}") ours_rm=("${oo[@]#-output=}")
    bench_row "bu.unbundleAll.$tag" "unbundle all 5 from $tag" "$bytes" llvm ours
    if ran ours; then
      local bad=0
      for k in 0 1 2 3; do check_extracted "$O/llvm.ua$((k + 1))" "$O/ours.ua$((k + 1))" "${imgs[k]}" || bad=1; done
      [ $bad = 1 ] || row_note "4 device entries intact"
    fi
    rm -f "$O"/*.ua?

    llvm=("$LLVM/clang-offload-bundler" "${common[@]}" -compress -output="$O/llvm.z")
    ours=("$LINKS/clang-offload-bundler" "${common[@]}" -compress -output="$O/ours.z")
    llvm_rm=("$O/llvm.z") ours_rm=("$O/ours.z")
    bench_row "bu.compress.$tag" "bundle -compress $tag, 1 thread" "$bytes" llvm ours
    if ran llvm && ran ours; then
      if why=$(same_file "$O/llvm.z" "$O/ours.z"); then
        row_note "CCOB byte-identical to LLVM's"
      else
        row_fail "CCOB differs from LLVM's: $why"
      fi
    fi
    rss_goal "bu.compress.$tag" 320
    rm -f "$O/ours.z"

    # The reference for the multithreaded row: zstd's own two workers, same
    # level and long-distance matching, on the same uncompressed bytes.
    local zref=()
    if command -v zstd >/dev/null; then
      zref=(zstd -3 --long -T2 -q -f -o "$O/ref.zst" "$O/llvm.hipfb")
      local zref_rm=("$O/ref.zst")
      bench_row "bu.zstdT2.$tag" "reference: zstd -3 --long -T2 on the uncompressed $tag bundle" "$bytes" zref ""
      rm -f "$O/ref.zst"
      unset zref_rm
    else
      log "no zstd command: no reference row for --threads 2"
    fi

    ours=("$OURS" bundle --type o --align 4096 --compress --threads 2 -o "$O/ours.mt.z" "${native[@]}")
    ours_rm=("$O/ours.mt.z")
    bench_row "bu.compressT2.$tag" "bundle --compress --threads 2 $tag (ours) vs LLVM -compress" "$bytes" llvm ours
    if ran ours; then
      if "$LLVM/clang-offload-bundler" -type=o -unbundle -targets="${HIP_TARGETS[4]}" -input="$O/ours.mt.z" -output="$O/mt.check" 2>/dev/null &&
        cmp -s "$O/mt.check" "${imgs[3]}"; then
        row_note "LLVM unbundles ours intact"
        if [ -f "$O/llvm.z" ]; then
          local lz oz
          lz=$(stat -c %s "$O/llvm.z")
          oz=$(stat -c %s "$O/ours.mt.z")
          row_note "$(awk -v o="$oz" -v l="$lz" 'BEGIN { printf "%+.1f%% bytes vs LLVM", (o / l - 1) * 100 }')"
        fi
      else
        row_fail "LLVM cannot unbundle our multithreaded CCOB"
      fi
      local zt=${ROW[bu.zstdT2.$tag.llvm.med]:-n/a} r
      if [ "$zt" != n/a ] && [ "$zt" != FAILED ] && [ "$zt" != untimed ]; then
        r=$(awk -v a="${ROW[bu.compressT2.$tag.ours.med]}" -v b="$zt" 'BEGIN { printf "%.2f", a / b }')
        if awk -v r="$r" 'BEGIN { exit !(r <= 1.25) }'; then
          row_note "ours = ${r}x zstd -T2's time (goal: 1.25x)"
        else
          row_note "ours = ${r}x zstd -T2's time, over the 1.25x goal"
        fi
      fi
    fi
    rss_goal "bu.compressT2.$tag" 256
    rm -f "$O/mt.check"

    # Unbundling every entry of that multi-frame CCOB with `unbundle
    # --threads 1` (the "LLVM" column: decoding, writing and the MD5 on one
    # thread) and `--threads 2` (the MD5 on its own thread, decoding and
    # writing on the other). Goal: 2 threads at least 1.6x faster.
    if [ -f "$O/ours.mt.z" ]; then
      local t1=() t2=()
      for k in 0 1 2 3 4; do
        t1+=("${HIP_TARGETS[k]}=$O/mt1.$k")
        t2+=("${HIP_TARGETS[k]}=$O/mt2.$k")
      done
      llvm=("$OURS" unbundle "$O/ours.mt.z" "${t1[@]}" --threads 1)
      ours=("$OURS" unbundle "$O/ours.mt.z" "${t2[@]}" --threads 2)
      llvm_rm=("${t1[@]#*=}") ours_rm=("${t2[@]#*=}")
      bench_row "bu.unbundleT2.$tag" "unbundle all 5 from our --threads 2 CCOB $tag: --threads 1 (left) vs 2" "$bytes" llvm ours
      if ran llvm && ran ours; then
        local bad=0
        for k in 0 1 2 3 4; do
          cmp -s "$O/mt1.$k" "$O/mt2.$k" || bad=1
        done
        for k in 0 1 2 3; do
          cmp -s "$O/mt2.$((k + 1))" "${imgs[k]}" || bad=1
        done
        if [ $bad = 0 ]; then
          row_note "same files on 1 and 2 threads, 4 device entries intact"
        else
          row_fail "unbundle --threads 2 wrote other files than --threads 1 or the inputs"
        fi
      fi
      if timed llvm && ran ours; then
        local x
        x=$(awk -v a="${ROW[bu.unbundleT2.$tag.llvm.med]}" -v b="${ROW[bu.unbundleT2.$tag.ours.med]}" \
          'BEGIN { printf "%.2f", a / b }')
        if awk -v x="$x" 'BEGIN { exit !(x >= 1.6) }'; then
          row_note "2 threads ${x}x faster than 1 (goal: 1.6x)"
        else
          row_note "2 threads only ${x}x faster than 1 (goal: 1.6x)"
        fi
      fi
      rm -f "$O"/mt1.? "$O"/mt2.?
      unset llvm_rm ours_rm
    fi
    rm -f "$O/ours.mt.z"

    [ -f "$O/llvm.z" ] || continue
    llvm=("$LLVM/clang-offload-bundler" -type=o -unbundle -targets="${HIP_TARGETS[2]}" -input="$O/llvm.z" -output="$O/llvm.zu")
    ours=("$LINKS/clang-offload-bundler" -type=o -unbundle -targets="${HIP_TARGETS[2]}" -input="$O/llvm.z" -output="$O/ours.zu")
    llvm_rm=("$O/llvm.zu") ours_rm=("$O/ours.zu")
    bench_row "bu.zunbundle1.$tag" "unbundle 1 target from compressed $tag" "$bytes" llvm ours
    if ran ours; then
      check_extracted "$O/llvm.zu" "$O/ours.zu" "${imgs[1]}" && row_note "entry intact"
    fi
    unset llvm_rm ours_rm
    [ "$KEEP" = 1 ] || rm -rf "$O"
  done
}

# check_extracted LLVM_OUT OURS_OUT ORIGINAL: 0 if both extractions equal
# the original image; otherwise notes what is wrong (ours wrong = failure).
check_extracted() {
  local why name ok=0
  name=$(basename "$3")
  if [ ! -f "$2" ]; then
    row_fail "we extracted no $name"; ok=1
  elif ! why=$(same_file "$2" "$3"); then
    row_fail "our extracted $name differs from the input: $why"; ok=1
  fi
  if [ ! -f "$1" ]; then
    row_note "LLVM extracted no $name"; ok=1
  elif ! why=$(same_file "$1" "$3"); then
    row_note "LLVM's extracted $name differs from the input: $why"; ok=1
  fi
  return $ok
}
