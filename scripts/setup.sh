#!/usr/bin/env bash
# Installs what offload-kit's tests need, on Debian, when it is missing:
# LLVM 22 (clang-22, llvm-22, lld-22, liboffload-22, libomp-22-dev), the system zstd
# library, the linkers the wrapper tests use, and qemu-user with the cross C
# libraries and binutils of the other host CPUs the wrapper writes for, and
# NVIDIA's ptxas, fatbinary, cuobjdump and libnvjpeg unpacked from their PyPI
# wheels (scripts/cuda-tools.sh), NVIDIA's nvprune 11.8 unpacked from Debian
# bookworm's non-free nvidia-cuda-toolkit (scripts/nvprune-tool.sh), maturin and auditwheel from PyPI in a venv
# of their own (scripts/wheel-tools.sh), conda-package-handling and py-rattler
# from PyPI in another (scripts/conda-tools.sh), variantlib, uv and pip in a
# third (scripts/variant-tools.sh), Rust's aarch64 target for the
# cross-built wheel (scripts/wheel.sh), and cargo-fuzz (scripts/fuzz.sh). Run as root (CI is), or with the
# packages already present.
#
#   bash scripts/setup.sh          # install what is missing
#   bash scripts/setup.sh --check  # only report; exit 1 if anything is missing
#   bash scripts/setup.sh --list-packages  # print the packages, one a line
set -euo pipefail

LLVM_BIN=/usr/lib/llvm-22/bin
PKGS=(clang-22 clang-tools-22 llvm-22 llvm-22-dev lld-22 liboffload-22 libomp-22-dev libzstd-dev pkg-config mold binutils gcc g++ bash dash coreutils bsdutils procps python3 python3-pip python3-venv)
# Packers for the package-scanning tests (linker-tests/packages.rs).
PKGS+=(zip tar gzip xz-utils zstd bzip2 cpio dpkg)
# lz4 makes real .tar.lz4 files: frames the scanners read
# (linker-tests/unread_formats.rs), legacy ones they must report as unread
# (linker-tests/hostile/round6_unread.rs).
PKGS+=(lz4)
# makeself writes real self-extracting .run installers (NVIDIA's CUDA
# installers are these), which the scanners must report as unread
# (linker-tests/hostile/round6_unread.rs).
PKGS+=(makeself)
# squashfs-tools (mksquashfs), 7zip and lzip make real squashfs images, .7z
# archives and .tar.lz files: the first two the scanners must refuse by name,
# the last they read as the plain tar (linker-tests/unread_formats.rs).
PKGS+=(squashfs-tools 7zip lzip)
# rpm gives rpmbuild, which builds real RPMs (payloads in gzip, xz and zstd),
# and rpm2cpio, whose cpio the scanners' reading of the RPM is compared with
# (linker-tests/rpms.rs).
PKGS+=(rpm rpm2cpio)
# squashfs-tools (mksquashfs, unsquashfs) builds the squashfs images, in every
# compression, that the scanners read and are compared with; siftool wraps one
# in a SIF (linker-tests/squashfs.rs).
PKGS+=(squashfs-tools siftool)
# attr (setfattr, getfattr) gives the files of a squashfs image user.* extended
# attributes, and lists those an image pruned kept (linker-tests/squashfs_prune.rs).
PKGS+=(attr)
# gpg makes the throwaway key rpmsign signs an RPM with before it is pruned
# (linker-tests/rpm_prune.rs).
PKGS+=(gpg)
# umoci builds and checks OCI image layouts, skopeo copies them to `docker
# save` archives (linker-tests/images.rs).
PKGS+=(umoci skopeo)
# AMD's roc-obj-ls, roc-obj-extract and roc-obj (Perl, from hipcc 5.2.3,
# unpacked by scripts/roc-obj-tools.sh) need File::Which, URI::Encode and
# GNU objdump (binutils, above) and dd; roc-obj (bash) runs util-linux's
# getopt and awk (linker-tests/roc_obj.rs).
PKGS+=(libfile-which-perl liburi-encode-perl perl util-linux mawk)
# eu-elflint checks the files prune shrinks (linker-tests/prune/shrink.rs).
PKGS+=(elfutils)
# setcap, setfacl and getfacl give files the capabilities, ACLs and other
# extended attributes that prune --in-place must keep; setpriv runs prune as
# another user (linker-tests/hostile/round6_meta.rs).
PKGS+=(libcap2-bin acl util-linux)
# Wine loads the Windows DLLs prune shrinks (linker-tests/windows_libs.rs).
PKGS+=(wine64)
# Headless Chromium renders `size --html` reports (their test in
# linker-tests/reports_html.rs, and the picture of scripts/size-html-picture.sh);
# a font gives its text glyphs.
PKGS+=(chromium fonts-dejavu-core)
# The wrapper's other host CPUs: qemu-user runs their programs, Debian's
# cross C libraries link them, and GNU ld for each (binutils-<triple>).
CROSS=(arm64:aarch64 ppc64el:powerpc64le s390x:s390x riscv64:riscv64)
PKGS+=(qemu-user)
for c in "${CROSS[@]}"; do
  PKGS+=("libc6-dev-${c%%:*}-cross" "libgcc-12-dev-${c%%:*}-cross" "binutils-${c##*:}-linux-gnu")
done

if [ "${1:-}" = "--list-packages" ]; then
  printf '%s\n' "${PKGS[@]}"
  exit 0
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${1:-}" = "--check" ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: missing packages: ${missing[*]}" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/sysroot-arm64/.complete ]; then
    echo "setup: the arm64 sysroot (scripts/arm64-sysroot.sh) is missing" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/cuda-tools/.complete ]; then
    echo "setup: NVIDIA's CUDA tools (scripts/cuda-tools.sh) are missing" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/roc-obj/.complete ]; then
    echo "setup: AMD's roc-obj scripts (scripts/roc-obj-tools.sh) are missing" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/nvprune/.complete ]; then
    echo "setup: NVIDIA's nvprune (scripts/nvprune-tool.sh) is missing" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/maturin/.complete ]; then
    echo "setup: maturin and auditwheel (scripts/wheel-tools.sh) are missing" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/conda-tools/.complete ]; then
    echo "setup: cph and py-rattler (scripts/conda-tools.sh) are missing" >&2
    exit 1
  fi
  if [ ! -e /opt/offload-kit/variant-tools/.complete ]; then
    echo "setup: variantlib and uv (scripts/variant-tools.sh) are missing" >&2
    exit 1
  fi
  echo "setup: all packages present"
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

for t in clang llvm-offload-binary clang-offload-bundler llvm-offload-wrapper llc ld.lld llvm-objdump llvm-ar llvm-readelf; do
  if [ ! -x "$LLVM_BIN/$t" ]; then
    echo "setup: $LLVM_BIN/$t is missing after installation" >&2
    exit 1
  fi
done
# Debian's arm64 offloading runtime, unpacked (not installed) for the
# tests that run aarch64 OpenMP programs under qemu-aarch64.
bash "$(dirname "${BASH_SOURCE[0]}")/arm64-sysroot.sh"
# NVIDIA's ptxas, fatbinary, cuobjdump and libnvjpeg (from PyPI wheels,
# unpacked, not installed), for the tests of compressed CUDA fatbin entries.
bash "$(dirname "${BASH_SOURCE[0]}")/cuda-tools.sh"
# AMD's roc-obj-ls, roc-obj-extract and roc-obj (bookworm's hipcc 5.2.3,
# downloaded and unpacked, not installed), the references of the drop-ins
# under those names.
bash "$(dirname "${BASH_SOURCE[0]}")/roc-obj-tools.sh"
# NVIDIA's nvprune (Debian bookworm's non-free nvidia-cuda-toolkit,
# downloaded through a private apt configuration and only nvprune unpacked,
# not installed), the reference of the nvprune drop-in's tests.
bash "$(dirname "${BASH_SOURCE[0]}")/nvprune-tool.sh"
# maturin and auditwheel (pinned, from PyPI, in their own venv), which
# build and check the wheel (scripts/wheel.sh; scripts/test.sh installs it).
bash "$(dirname "${BASH_SOURCE[0]}")/wheel-tools.sh"
# conda-package-handling and py-rattler (pinned, from PyPI, in their own
# venv), which build, unpack and install the conda packages that
# linker-tests/prune/conda.rs prunes.
bash "$(dirname "${BASH_SOURCE[0]}")/conda-tools.sh"
# variantlib, uv and pip (pinned, from PyPI, in their own venv), which
# validate, resolve and install split's wheel variants
# (linker-tests/prune/split_installers.rs).
bash "$(dirname "${BASH_SOURCE[0]}")/variant-tools.sh"
# Rust's standard library for aarch64, for the cross-built aarch64 wheel
# (scripts/wheel.sh links it with clang-22 and lld against Debian's arm64
# cross libc above). The tests do not need it: a rustup that cannot fetch it
# only warns.
if command -v rustup >/dev/null 2>&1 &&
  ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 ||
    echo "setup: warning: rustup could not add aarch64-unknown-linux-gnu (only scripts/wheel.sh aarch64 needs it)" >&2
fi
# cargo-fuzz (pinned, from crates.io), which builds and runs the fuzz
# targets of scripts/fuzz/ (scripts/fuzz.sh); the tests replay their corpora
# without it.
if ! cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz 0.13.2"; then
  cargo install cargo-fuzz --version 0.13.2 --locked >/dev/null 2>&1 ||
    { echo "setup: cargo install cargo-fuzz 0.13.2 failed" >&2; exit 1; }
fi
"$LLVM_BIN/llvm-offload-binary" --version | grep -q "LLVM version 22\." || {
  echo "setup: $LLVM_BIN/llvm-offload-binary is not LLVM 22" >&2
  exit 1
}
echo "setup: LLVM 22 tools ready in $LLVM_BIN"
