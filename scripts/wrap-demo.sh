#!/usr/bin/env bash
# The wrapper end to end, without LLVM: offload-kit writes the host object
# that registers a shipped device image (fixtures/wrap/device.ob, an x86-64
# OpenMP device image packed by LLVM 22), the system C compiler links it with
# a small stub runtime (linker-tests/wrap/stub.c), and the program prints what
# the runtime was handed: the descriptor, the image bytes, the host entry
# table and the order of the calls. When LLVM 22 is installed, the same is
# done with llvm-offload-wrapper + llc: the two printouts must be equal, and
# so must the two objects, byte for byte.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The shipped binary (`--release`); scripts/test.sh names its own cargo
# profile in OFFLOAD_KIT_PROFILE, to reuse what its tests built.
profile=${OFFLOAD_KIT_PROFILE:-release}
cargo build --profile "$profile" --locked -q
ok=${CARGO_TARGET_DIR:-target}/$([ "$profile" = dev ] && echo debug || echo "$profile")/offload-kit
cc=${CC:-cc}
B=/usr/lib/llvm-22/bin
T=x86_64-unknown-linux-gnu
img=fixtures/wrap/device.ob
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

echo "== the device image"
"$ok" list "$img"

echo "== offload-kit wrap: the host object, written directly"
"$ok" wrap --kind=openmp --triple=$T -o "$w/wrap.o" "$img"
readelf -SW "$w/wrap.o" | sed -n 's/^ *\[ *[0-9]*\] //p' | awk '$1 != "NULL" && $1 !~ /^\.(rela|symtab|strtab|shstrtab)/ {print "  " $1, $2}'

echo "== linked by $cc with a stub runtime, and run"
"$cc" -O1 -DENTRY_SIZE=56 -c linker-tests/wrap/stub.c -o "$w/stub.o"
"$cc" fixtures/wrap/demo_main.c "$w/stub.o" "$w/wrap.o" -o "$w/demo"
"$w/demo" | tee "$w/ours.log"
size=$("$ok" list "$img" | awk '$1 == "0" {print $7}')
grep -q "image 0: $size bytes, .* starts 7f 45 4c 46, entries = descriptor's" "$w/ours.log"
grep -q "__tgt_unregister_lib (the registered descriptor)" "$w/ours.log"
echo "registered: the $size-byte device ELF inside the OffloadBinary, with the host entry table"

if [ -x "$B/llvm-offload-wrapper" ] && [ -x "$B/llc" ]; then
  echo "== the same with LLVM 22: llvm-offload-wrapper + llc -relocation-model=pic"
  "$B/llvm-offload-wrapper" --kind=openmp --triple=$T -o "$w/wrap.bc" "$img"
  "$B/llc" -filetype=obj -relocation-model=pic "$w/wrap.bc" -o "$w/llvm.o"
  "$cc" fixtures/wrap/demo_main.c "$w/stub.o" "$w/llvm.o" -o "$w/demo-llvm"
  "$w/demo-llvm" >"$w/llvm.log"
  diff "$w/ours.log" "$w/llvm.log"
  echo "the runtime is handed exactly the same with LLVM's object"
  cmp "$w/wrap.o" "$w/llvm.o"
  echo "and the two objects are the same $(stat -c %s "$w/wrap.o") bytes"
fi
