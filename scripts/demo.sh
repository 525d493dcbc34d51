#!/usr/bin/env bash
# The main job end to end on the shipped fixtures:
# 1. the wrapper (scripts/wrap-demo.sh): offload-kit writes the registration
#    object for a shipped OpenMP device image, cc links it with a stub runtime,
#    the program runs and shows what was registered, the same as with LLVM's
#    llvm-offload-wrapper + llc;
# 2. the packager: offload-kit, run as llvm-offload-binary, packs the fixture
#    device images byte for byte as LLVM 22 does, lists and unpacks them, and
#    LLVM 22 extracts the same bytes from offload-kit's pack;
# 3. the bundler: offload-kit, run as clang-offload-bundler, makes the same
#    compressed bundle as LLVM 22, and each unbundles the other's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo "######## 1. the wrapper"
bash scripts/wrap-demo.sh
echo
echo "######## 2. the packager"
# The shipped binary (`--release`); scripts/test.sh names its own cargo
# profile in OFFLOAD_KIT_PROFILE, to reuse what its tests built.
profile=${OFFLOAD_KIT_PROFILE:-release}
cargo build --profile "$profile" --locked -q
ok=${CARGO_TARGET_DIR:-target}/$([ "$profile" = dev ] && echo debug || echo "$profile")/offload-kit
B=/usr/lib/llvm-22/bin
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
"$ok" install-links "$w/bin" >/dev/null
img=fixtures/offload_binary/images
images=(
  --image=file=$img/gfx90a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp
  --image=file=$img/sm_80.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda
  --image=file=$img/kernel.s,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=openmp,note=ptx
)

echo "== pack with offload-kit (as llvm-offload-binary) and with LLVM 22"
"$w/bin/llvm-offload-binary" -o "$w/ours.bin" "${images[@]}"
"$B/llvm-offload-binary" -o "$w/llvm.bin" "${images[@]}"
cmp "$w/ours.bin" "$w/llvm.bin"
echo "identical: $(stat -c %s "$w/ours.bin") bytes"

echo "== offload-kit list"
"$ok" list "$w/ours.bin"

echo "== offload-kit unpack"
"$ok" unpack "$w/ours.bin" -o "$w/unpacked"

echo "== LLVM 22 extracts the same bytes from offload-kit's pack"
(cd "$w" && "$B/llvm-offload-binary" ours.bin --image=file=llvm-gfx90a.o,arch=gfx90a \
  --image=file=llvm-sm_80.cubin,arch=sm_80 --image=file=llvm-sm_70.s,arch=sm_70)
cmp "$w/llvm-gfx90a.o" "$img/gfx90a.o"
cmp "$w/llvm-sm_80.cubin" "$img/sm_80.cubin"
cmp "$w/llvm-sm_70.s" "$img/kernel.s"
cmp "$w/unpacked/ours-amdgcn-amd-amdhsa-gfx90a.0.o" "$img/gfx90a.o"
cmp "$w/unpacked/ours-nvptx64-nvidia-cuda-sm_80.1.cubin" "$img/sm_80.cubin"
cmp "$w/unpacked/ours-nvptx64-nvidia-cuda-sm_70.2.s" "$img/kernel.s"
echo "all extracted images match the originals"

echo
echo "######## 3. the bundler"
t=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a,openmp-nvptx64-nvidia-cuda--sm_80
in=(-input=$img/host.c -input=$img/gfx90a.o -input=$img/sm_80.cubin)
"$w/bin/clang-offload-bundler" -type=bc -targets=$t "${in[@]}" -output="$w/ours.bc" -compress
"$B/clang-offload-bundler" -type=bc -targets=$t "${in[@]}" -output="$w/llvm.bc" -compress
cmp "$w/ours.bc" "$w/llvm.bc"
echo "identical compressed bundles: $(stat -c %s "$w/ours.bc") bytes"
"$ok" list "$w/ours.bc"
"$B/clang-offload-bundler" -type=bc -unbundle -targets=openmp-nvptx64-nvidia-cuda--sm_80 -input="$w/ours.bc" -output="$w/llvm-sm80"
"$w/bin/clang-offload-bundler" -type=bc -unbundle -targets=openmp-amdgcn-amd-amdhsa--gfx90a -input="$w/llvm.bc" -output="$w/ours-gfx90a"
cmp "$w/llvm-sm80" "$img/sm_80.cubin"
cmp "$w/ours-gfx90a" "$img/gfx90a.o"
echo "each tool unbundles the other's bundle to the original files"
