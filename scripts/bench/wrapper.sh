# shellcheck shell=bash
# scripts/bench/wrapper.sh, sourced by scripts/bench.sh: the group wrapper.
# Wrapper (llvm-offload-wrapper + llc), per WRAP_SIZES entry (MiB per image;
# default "16 256 1024", QUICK: "1"): one OffloadBinary holding one device
# image of about that size (cut from the standard images, so the bytes look
# like code), wrapped into the x86-64 host object that registers it
#   (a) by LLVM: llvm-offload-wrapper, then llc -relocation-model=pic (as
#       clang-linker-wrapper compiles the module), and
#   (b) by ld.lld -r -b binary, which puts the same bytes in an object and
#       nothing else: the physical reference for writing them.
# Checks: our object's .llvm.offloading holds the input byte for byte, and our
# peak RSS is at most the input size plus 32 MiB. Notes: the speed-up over
# LLVM (goal: at least 50x) and the time relative to ld.lld (goal: 1.5x).
# shellcheck disable=SC2034 # read through ${!var} in check_llvm
NEEDS_wrapper="llvm-offload-binary llvm-offload-wrapper llc ld.lld llvm-readelf clang clang-linker-wrapper"
WRAP_TRIPLE=x86_64-unknown-linux-gnu

step_wrapper() {
  local sizes s max=0
  if [ "$QUICK" = 1 ]; then sizes=${WRAP_SIZES:-1}; else sizes=${WRAP_SIZES:-"16 256 1024"}; fi
  for s in $sizes; do
    [[ $s =~ ^[1-9][0-9]*$ ]] || die "WRAP_SIZES must be whole MiB (got '$s')"
    [ "$s" -gt "$max" ] && max=$s
  done
  # The 4 standard images of a size class whose concatenation covers the
  # largest input (make_inputs reads SIZE_LIST; this local shadows it).
  local per=$(((max + 3) / 4))
  local SIZE_LIST=("$per")
  make_inputs
  local src=("$IN/s$((4 * per))M/img0.bin" "$IN/s$((4 * per))M/img1.bin"
    "$IN/s$((4 * per))M/img2.bin" "$IN/s$((4 * per))M/img3.bin")
  for s in $sizes; do
    local O=$W/out/wrap.$s tag=${s}MiB
    mkdir -p "$O"
    # S MiB less 64 KiB, plus an odd tail: not a whole number of pages.
    local n=$(((s << 20) - 65536 + 13))
    # (cat ends on SIGPIPE once head has enough: not an error here.)
    { cat "${src[@]}" | head -c "$n" >"$O/dev.bin"; } || true
    [ "$(stat -c %s "$O/dev.bin")" = "$n" ] || die "could not cut a $tag image from ${src[*]}"
    # Named .o so the image kind is "object", as a linked CPU image's is.
    mv "$O/dev.bin" "$O/dev.o"
    "$LLVM/llvm-offload-binary" -o "$O/dev.ob" \
      "--image=file=$O/dev.o,triple=$WRAP_TRIPLE,arch=generic,kind=openmp" ||
      die "llvm-offload-binary failed to pack the $tag wrapper input"
    rm -f "$O/dev.o"
    local ob=$O/dev.ob bytes
    bytes=$(stat -c %s "$ob")
    cat "$ob" >/dev/null

    # shellcheck disable=SC2016 # the inner bash expands them
    local llvm=(bash -c '"$1/llvm-offload-wrapper" --kind=openmp --triple="$2" -o "$3/llvm.bc" "$4" &&
      "$1/llc" -filetype=obj -relocation-model=pic "$3/llvm.bc" -o "$3/llvm.o"' \
      llvm-pair "$LLVM" "$WRAP_TRIPLE" "$O" "$ob")
    local llvm_rm=("$O/llvm.bc" "$O/llvm.o")
    local ours=("$OURS" wrap --kind=openmp "--triple=$WRAP_TRIPLE" -o "$O/ours.o" "$ob")
    local ours_rm=("$O/ours.o")
    bench_row "wrap.llvm.$tag" "wrap $tag (LLVM: llvm-offload-wrapper + llc)" "$bytes" llvm ours
    if ran ours; then
      check_wrapped "$O/ours.o" "$ob" "$bytes"
      local peak=${ROW[wrap.llvm.$tag.ours.peak]}
      if awk -v p="$peak" -v b="$bytes" 'BEGIN { exit !(p <= b / 1048576 + 32) }'; then
        row_note "peak RSS within input + 32 MiB"
      else
        row_fail "peak RSS $peak MiB exceeds the input size plus 32 MiB"
      fi
    fi
    if timed llvm && ran ours; then
      local x
      x=$(awk -v a="${ROW[wrap.llvm.$tag.llvm.med]}" -v b="${ROW[wrap.llvm.$tag.ours.med]}" \
        'BEGIN { printf "%.0f", a / b }')
      if [ "$x" -ge 50 ]; then row_note "${x}x faster (goal: 50x)"; else row_note "only ${x}x faster (goal: 50x)"; fi
    fi
    rm -f "$O/llvm.bc" "$O/llvm.o"

    llvm=("$LLVM/ld.lld" -m elf_x86_64 -r -b binary -o "$O/lld.o" "$ob")
    llvm_rm=("$O/lld.o")
    bench_row "wrap.lld.$tag" "wrap $tag (reference: ld.lld -r -b binary)" "$bytes" llvm ours
    if timed llvm && ran ours; then
      local r
      r=$(awk -v a="${ROW[wrap.lld.$tag.ours.med]}" -v b="${ROW[wrap.lld.$tag.llvm.med]}" \
        'BEGIN { printf "%.2f", a / b }')
      if awk -v r="$r" 'BEGIN { exit !(r <= 1.5) }'; then
        row_note "ours = ${r}x ld.lld's time (goal: 1.5x)"
      else
        row_note "ours = ${r}x ld.lld's time, over the 1.5x goal"
      fi
    fi

    # clang-linker-wrapper --dry-run (as clang runs it) over a host object
    # carrying the image in .llvm.offloading: extraction of the image to a
    # temporary file and the wrapper object (LLVM: through its code
    # generator); the device and host link commands are printed, not run.
    printf '\t.section .llvm.offloading,"e",@llvm_offloading\n\t.p2align 3\n\t.incbin "%s"\n' \
      "$ob" >"$O/dev.s"
    printf 'int main(void) { return 0; }\n' >"$O/main.c"
    "$LLVM/clang" -c "$O/dev.s" -o "$O/dev-host.o" && "$LLVM/clang" -c "$O/main.c" -o "$O/main.o" ||
      die "clang failed to make the $tag host objects"
    local lw_args=(--dry-run "--host-triple=$WRAP_TRIPLE" --linker-path=/usr/bin/ld
      -o "$O/a.out" "$O/main.o" "$O/dev-host.o")
    llvm=("$LLVM/clang-linker-wrapper" "${lw_args[@]}")
    llvm_rm=()
    ours=(env "PATH=$LLVM:$PATH" "$LINKS/clang-linker-wrapper" "${lw_args[@]}")
    ours_rm=()
    bench_row "wrap.linker-wrapper.$tag" "clang-linker-wrapper --dry-run, $tag image in a host object" \
      "$bytes" llvm ours
    if ran llvm && ran ours; then
      local lw=$W/raw/wrap.linker-wrapper.$tag
      if [ "$(sed 's/-[0-9a-f]\{6\}\././g' "$lw.llvm.stderr")" = "$(sed 's/-[0-9a-f]\{6\}\././g' "$lw.ours.stderr")" ]; then
        row_note "same commands (temporary names aside)"
      else
        row_fail "the printed commands differ from LLVM's"
      fi
    fi

    # The same image given through --override-image=openmp=<ELF file> (no
    # extraction, no device link): with --dry-run (the wrapping alone;
    # goal: 10x faster, peak RSS under 64 MiB), and as a whole link, a
    # shared library linked by ld.lld (goal: 4x faster).
    "$LLVM/ld.lld" -m elf_x86_64 -r -b binary -o "$O/dev.elf" "$O/dev.ob" ||
      die "ld.lld could not make the $tag override image"
    "$LLVM/clang" -fPIC -c "$O/main.c" -o "$O/main-pic.o" || die "clang failed"
    cat "$O/dev.elf" >/dev/null
    local ov_args=("--override-image=openmp=$O/dev.elf" "--host-triple=$WRAP_TRIPLE")
    llvm=("$LLVM/clang-linker-wrapper" --dry-run "${ov_args[@]}" --linker-path=/usr/bin/ld
      -o "$O/a.out" "$O/main.o")
    ours=(env "PATH=$LLVM:$PATH" "$LINKS/clang-linker-wrapper" --dry-run "${ov_args[@]}"
      --linker-path=/usr/bin/ld -o "$O/a.out" "$O/main.o")
    bench_row "wrap.lw-override-dry.$tag" "clang-linker-wrapper --dry-run --override-image, $tag image" \
      "$bytes" llvm ours
    lw_goal "wrap.lw-override-dry.$tag" 10 64 "$s"
    llvm=("$LLVM/clang-linker-wrapper" "${ov_args[@]}" "--linker-path=$LLVM/ld.lld" -shared
      -o "$O/llvm.so" "$O/main-pic.o")
    ours=(env "PATH=$LLVM:$PATH" "$LINKS/clang-linker-wrapper" "${ov_args[@]}"
      "--linker-path=$LLVM/ld.lld" -shared -o "$O/ours.so" "$O/main-pic.o")
    llvm_rm=("$O/llvm.so")
    ours_rm=("$O/ours.so")
    bench_row "wrap.lw-override-link.$tag" "clang-linker-wrapper --override-image, $tag image, whole link (ld.lld -shared)" \
      "$bytes" llvm ours
    lw_goal "wrap.lw-override-link.$tag" 4 "" "$s"
    [ "$KEEP" = 1 ] || rm -rf "$O"
  done
}

# check_wrapped OBJECT INPUT BYTES: the object's .llvm.offloading section is
# the input, byte for byte.
check_wrapped() {
  local off size
  read -r off size < <("$LLVM/llvm-readelf" -SW "$1" |
    sed -n 's/.* \.llvm\.offloading  *[^ ]*  *[0-9a-f]*  *\([0-9a-f]*\)  *\([0-9a-f]*\) .*/\1 \2/p') || true
  if [ -z "${off:-}" ]; then
    row_fail "no .llvm.offloading section in our object"
  elif [ $((16#$size)) != "$3" ]; then
    row_fail ".llvm.offloading is $((16#$size)) bytes, the input $3"
  elif ! cmp -s -n "$3" -i "$((16#$off)):0" "$1" "$2"; then
    row_fail ".llvm.offloading differs from the input"
  else
    row_note "image embedded intact"
  fi
}
