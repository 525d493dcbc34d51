#!/usr/bin/env bash
# Downloads the real third-party libraries the scanner tests read
# (linker-tests/real_libs.rs), pinned by version and SHA-256, into a cache
# that later runs reuse:
#   - librocrand1 5.3.3-4 from Debian bookworm (an 8 MB .deb: a HIP library
#     whose .hip_fatbin bundle holds code objects for seven AMD GPUs, among
#     them gfx90a:xnack+ and gfx90a:xnack-);
#   - nvidia-curand-cu12 10.3.7.77 from PyPI (a 56 MB wheel: libcurand with
#     98 cubins for eight SM versions);
#   - cupy-cuda13x 13.6.0 from PyPI (a 52 MB wheel: CuPy's extension modules,
#     each with a fatbin of zstd-compressed cubins for sm_75 to sm_120 and
#     sm_120 PTX; CuPy's CUDA 12 wheels hold sm_50 cubins, which cuobjdump 13
#     refuses to read).
# With --onnxruntime, only this one (linker-tests/real_libs.rs reads it in a
# trial of its own, so the others do not wait for it):
#   - onnxruntime-gpu 1.31.1 from PyPI (a 256 MB manylinux_2_28 wheel built
#     with CUDA 12.8: libonnxruntime_providers_cuda.so, 2,058 zstd-compressed
#     cubins, 917 of them arch-specific, sm_90a and sm_120a).
# With --windows, only these (linker-tests/windows_libs.rs), Windows wheels
# and the same versions' Linux wheels they are compared with:
#   - nvidia-curand-cu12 10.3.7.77 win_amd64 (a 56 MB wheel: curand64_10.dll,
#     a PE image whose 11 fatbins sit in `.nv_fatb`, 98 cubins and PTX);
#   - cupy-cuda12x 14.2.0 win_amd64 and manylinux2014_x86_64 (99 and 136 MB:
#     three extension modules with fatbins, `.pyd` on Windows);
#   - nvidia-nvjpeg-cu12 12.4.0.76 win_amd64 and manylinux2014_x86_64 (5 MB
#     each: nvjpeg64_12.dll and libnvjpeg.so.12, 175 images each);
#   - bitsandbytes 0.50.2 win_amd64 and manylinux_2_24_x86_64 (39 and 43 MB:
#     seven CUDA DLLs with relocatable fatbins in `__nv_rel`, two SYCL DLLs
#     whose images lie in `__CLANG_` listed by `.tgtimg`, three HIP DLLs).
# With --prune, only these (linker-tests/prune/nvidia.rs prunes them and
# loads what it pruned):
#   - nvidia-cusparse-cu12 12.5.10.65 (as with --bench), whose 23 fatbins
#     of sm_70 to sm_86 cubins alone an sm_90 rule empties, and
#     nvidia-nvjitlink-cu12 12.9.86 (40 MB), the libnvJitLink.so.12 it
#     needs to load (it asks for version 12.9);
#   - nvidia-curand 10.4.5.25 (a 77 MB manylinux_2_27 wheel: cuRAND for
#     CUDA 13, libcurand.so.10 in nvidia/cu13/lib, linked with 2 MiB
#     alignment) and nvidia-cuda-runtime 13.5.37 (2.5 MB: the
#     libcudart.so.13 it needs);
#   - nvidia-nvjpeg-cu12 12.4.0.76 manylinux2014_x86_64 (as with --windows);
#   - nvidia-nvshmem-cu12 3.4.5 (a 139 MB wheel, a dependency of torch
#     2.10: libnvshmem_device.a, a static archive of relocatable CUDA
#     objects, and libnvshmem_host.so.3, whose fatbins lie in two sections,
#     `.nv_fatbin` and `__nv_relfatbin`).
# With --rocblas, only this one (linker-tests/prune/rocblas.rs):
#   - librocblas0 5.5.1+dfsg-7 from Debian trixie (a 166 MB .deb, 2.3 GB
#     installed: librocblas.so.0.1, a fat library of 67 code objects for
#     each of 13 AMD GPUs, and 18 files of one GPU's code each, the
#     Tensile kernels `Kernels.so-000-<arch>.hsaco` and
#     `TensileLibrary_<arch>.co`).
# With --rocsparse, only librocsparse0 (as with --bench below), whose
# listing linker-tests/roc_obj.rs compares with AMD's roc-obj-ls.
# With --bench, also the two large ones scripts/bench.sh's real_libs group
# times (its step downloads them):
#   - librocsparse0 5.3.0+dfsg-2 from Debian bookworm (94 MB .deb whose
#     data.tar.xz, 53 xz blocks, unpacks to a 1.3 GB library);
#   - nvidia-cusparse-cu12 12.5.10.65 from PyPI (a 366 MB wheel: libcusparse,
#     1,862 images, most of them LZ4-compressed cubins).
# Nothing is installed. A download that fails or does not match its hash is
# an error (exit 1), and nothing of it is kept.
#
#   bash scripts/real-libs.sh [--bench | --onnxruntime | --windows | --prune | --rocblas | --rocsparse] [DIR]
#                         # DIR: default $OFFLOAD_KIT_CACHE/real-libs,
#                         # else /var/cache/offload-kit/real-libs
set -euo pipefail

BENCH=0
ORT=0
WINDOWS=0
PRUNE=0
ROCBLAS=0
ROCSPARSE=0
case "${1:-}" in
  --bench) BENCH=1; shift ;;
  --prune) PRUNE=1; shift ;;
  --windows) WINDOWS=1; shift ;;
  --onnxruntime) ORT=1; shift ;;
  --rocblas) ROCBLAS=1; shift ;;
  --rocsparse) ROCSPARSE=1; shift ;;
esac
DIR=${1:-${OFFLOAD_KIT_CACHE:-/var/cache/offload-kit}/real-libs}
# file|sha256|how[|platform]: a deb.debian.org pool path, or
# pip:REQUIREMENT for the wheel of that platform (manylinux2014_x86_64 when
# none is given)
FILES=(
  "librocrand1_5.3.3-4_amd64.deb|b145d4e47a26ce14da5f8550a092db8d3c7e2d84174c68885336de40f51b7b81|pool/main/r/rocrand/librocrand1_5.3.3-4_amd64.deb"
  "nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl|99f1a32f1ac2bd134897fc7a203f779303261268a65762a623bf30cc9fe79117|pip:nvidia-curand-cu12==10.3.7.77"
  "cupy_cuda13x-13.6.0-cp312-cp312-manylinux2014_x86_64.whl|f06b2585b68639fdf3975be06a91e3106b1306a43d77848b6c28df7f8ea98299|pip:cupy-cuda13x==13.6.0"
)
if [ "$ORT" = 1 ]; then
  FILES=(
    "onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl|05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7|pip:onnxruntime-gpu==1.31.1|manylinux_2_28_x86_64"
  )
fi
if [ "$WINDOWS" = 1 ]; then
  FILES=(
    "nvidia_curand_cu12-10.3.7.77-py3-none-win_amd64.whl|6d6d935ffba0f3d439b7cd968192ff068fafd9018dbf1b85b37261b13cfc9905|pip:nvidia-curand-cu12==10.3.7.77|win_amd64"
    "cupy_cuda12x-14.2.0-cp312-cp312-win_amd64.whl|c9571d3b5f2e65758137e210f7fb3c3b34767f0af6b6ca04035a244b6141ee12|pip:cupy-cuda12x==14.2.0|win_amd64"
    "cupy_cuda12x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl|f82141761f2c81905d49387464ae29438887956d99063381c93a1d5d1b7d32e8|pip:cupy-cuda12x==14.2.0"
    "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-win_amd64.whl|21923726db667bd53050d0de88320983ff423322b7f376057dd943e487c40abc|pip:nvidia-nvjpeg-cu12==12.4.0.76|win_amd64"
    "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|3888f10b32fbd58e80166c48e01073732d752fa5f167b7cb5b9615f1c6375a20|pip:nvidia-nvjpeg-cu12==12.4.0.76"
    "bitsandbytes-0.50.2-py3-none-win_amd64.whl|c697963c8fda3dcd0d7ebd9b5211ae4067feef7cd06e0350d4e816a434fe683d|pip:bitsandbytes==0.50.2|win_amd64"
    "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl|55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283|pip:bitsandbytes==0.50.2|manylinux_2_24_x86_64"
  )
fi
if [ "$PRUNE" = 1 ]; then
  FILES=(
    "nvidia_cusparse_cu12-12.5.10.65-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|73060ce019ac064a057267c585bf1fd5a353734151f87472ff02b2c5c9984e78|pip:nvidia-cusparse-cu12==12.5.10.65"
    "nvidia_nvjitlink_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl|e3f1171dbdc83c5932a45f0f4c99180a70de9bd2718c1ab77d14104f6d7147f9|pip:nvidia-nvjitlink-cu12==12.9.86"
    "nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl|22bb226a857e5888fe6b54ae465fc4371296bcff13a35f79e19691bcf454f529|pip:nvidia-curand==10.4.5.25|manylinux_2_27_x86_64"
    "nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d|pip:nvidia-cuda-runtime==13.5.37"
    "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|3888f10b32fbd58e80166c48e01073732d752fa5f167b7cb5b9615f1c6375a20|pip:nvidia-nvjpeg-cu12==12.4.0.76"
    "nvidia_nvshmem_cu12-3.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|042f2500f24c021db8a06c5eec2539027d57460e1c1a762055a6554f72c369bd|pip:nvidia-nvshmem-cu12==3.4.5"
  )
fi
if [ "$ROCBLAS" = 1 ]; then
  FILES=(
    "librocblas0_5.5.1+dfsg-7_amd64.deb|951dfa1a46ee275dace455f396640cfc63a47927455a0903b73c4e50030574c1|pool/main/r/rocblas/librocblas0_5.5.1+dfsg-7_amd64.deb"
  )
fi
ROCSPARSE_DEB="librocsparse0_5.3.0+dfsg-2_amd64.deb|688878bb8cb9ec7970e7b632828d91336a6819860fb0c306372eb6a7199b3b8e|pool/main/r/rocsparse/librocsparse0_5.3.0+dfsg-2_amd64.deb"
if [ "$ROCSPARSE" = 1 ]; then
  FILES=("$ROCSPARSE_DEB")
fi
if [ "$BENCH" = 1 ]; then
  FILES+=(
    "$ROCSPARSE_DEB"
    "nvidia_cusparse_cu12-12.5.10.65-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|73060ce019ac064a057267c585bf1fd5a353734151f87472ff02b2c5c9984e78|pip:nvidia-cusparse-cu12==12.5.10.65"
  )
fi

mkdir -p "$DIR"
for f in "${FILES[@]}"; do
  IFS='|' read -r name sum how platform <<<"$f"
  if [ -e "$DIR/$name" ] && echo "$sum  $DIR/$name" | sha256sum -c --status; then
    continue
  fi
  work=$(mktemp -d "$DIR/.partial.XXXXXX")
  if [[ $how == pip:* ]]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform "${platform:-manylinux2014_x86_64}" --python-version 3.12 \
      -d "$work" "${how#pip:}" >&2 || { rm -rf "$work"; echo "real-libs: cannot download ${how#pip:}" >&2; exit 1; }
  else
    python3 - "https://deb.debian.org/debian/$how" "$work/$name" <<'EOF' || { rm -rf "$work"; echo "real-libs: cannot download $how" >&2; exit 1; }
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=120) as r, open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(r, out, 1 << 20)
EOF
  fi
  if [ ! -e "$work/$name" ] || ! echo "$sum  $work/$name" | sha256sum -c --status; then
    rm -rf "$work"
    echo "real-libs: $name does not match its SHA-256 $sum" >&2
    exit 1
  fi
  mv "$work/$name" "$DIR/$name"
  rm -rf "$work"
done
echo "$DIR"
