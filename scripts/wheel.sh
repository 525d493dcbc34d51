#!/usr/bin/env bash
# Builds the `offload-kit` wheels (pyproject.toml: maturin, `bindings =
# "bin"`) into DIR, checks each with auditwheel, and runs the binary in
# each: x86_64 natively, aarch64 under qemu-aarch64 with Debian's arm64
# cross libc. `pip install DIR/offload_kit-*.whl` then puts `offload-kit` on
# the PATH of the environment. docs/release.md says what the wheels hold.
#
#   bash scripts/wheel.sh DIR [x86_64] [aarch64]   # default: both
#   PROFILE=ci bash scripts/wheel.sh DIR x86_64    # another cargo profile
#                                                  # (scripts/test.sh)
#
# Both are linked against glibc 2.36 (Debian 12): the tag is manylinux_2_34,
# the newest symbol version the binary needs. The aarch64 wheel is
# cross-built with what scripts/setup.sh installs: rustup's
# aarch64-unknown-linux-gnu target, clang-22 and ld.lld as C compiler and
# linker, and the libc6-dev-arm64-cross and libgcc-12-dev-arm64-cross
# packages as the target's C library.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ $# -ge 1 ] || { sed -n '2,17s/^# \{0,1\}//p' "$0" >&2; exit 2; }
OUT=$1
shift
ARCHES=("$@")
[ ${#ARCHES[@]} -gt 0 ] || ARCHES=(x86_64 aarch64)
for arch in "${ARCHES[@]}"; do
  case $arch in
    x86_64 | aarch64) ;;
    *) echo "wheel: unknown architecture '$arch' (x86_64 or aarch64)" >&2; exit 2 ;;
  esac
done
PROFILE=${PROFILE:-release}
TOOLS=${WHEEL_TOOLS:-/opt/offload-kit/maturin}
LLVM_BIN=/usr/lib/llvm-22/bin
TAG=manylinux_2_34
export PATH="$HOME/.cargo/bin:$PATH"

for t in maturin auditwheel; do
  [ -x "$TOOLS/bin/$t" ] || { echo "wheel: $TOOLS/bin/$t is missing (bash scripts/setup.sh)" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

for arch in "${ARCHES[@]}"; do
  target=$arch-unknown-linux-gnu
  env=()
  args=()
  run=()
  case $arch in
    # Built for the host without --target: the build shares target/PROFILE
    # with cargo's own (scripts/test.sh's tests) and reuses what it built.
    x86_64) ;;
    aarch64)
      args=(--target "$target")
      rustup target list --installed 2>/dev/null | grep -qx "$target" || {
        echo "wheel: Rust's $target target is missing (bash scripts/setup.sh adds it with rustup)" >&2
        exit 1
      }
      # clang-22 finds Debian's cross C library and crt files for the
      # target by itself; lld links. The bundled C libraries (zstd, xz)
      # are compiled by the same clang; xz gets the defines configure
      # would find for aarch64 (fast unaligned access: .cargo/config.toml
      # says why).
      env=(
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=$LLVM_BIN/clang
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS=-C link-arg=--target=$target -C link-arg=-fuse-ld=lld"
        CC_aarch64_unknown_linux_gnu=$LLVM_BIN/clang
        AR_aarch64_unknown_linux_gnu=$LLVM_BIN/llvm-ar
        "CFLAGS_aarch64_unknown_linux_gnu=--target=$target -DTUKLIB_FAST_UNALIGNED_ACCESS=1 -DHAVE___BUILTIN_BSWAPXX=1 -DHAVE___BUILTIN_ASSUME_ALIGNED=1"
      )
      run=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
      ;;
  esac
  whl=$OUT/offload_kit-$version-py3-none-${TAG}_$arch.whl
  rm -f "$whl"
  echo "== wheel for $arch ($PROFILE profile)"
  # `--auditwheel check`: fail, rather than copy a library into the wheel,
  # if the binary needs one that manylinux does not allow.
  env "${env[@]}" "$TOOLS/bin/maturin" build --locked --quiet --profile "$PROFILE" \
    "${args[@]}" --compatibility "$TAG" --auditwheel check --out "$OUT"
  [ -f "$whl" ] || { echo "wheel: maturin did not write $whl" >&2; exit 1; }
  # auditwheel wraps its sentences: read them as one line.
  show=$("$TOOLS/bin/auditwheel" show "$whl")
  [[ ${show//$'\n'/ } == *"consistent with the following platform tag: \"${TAG}_$arch\""* ]] || {
    printf '%s\n' "$show" >&2
    echo "wheel: auditwheel does not find $whl consistent with ${TAG}_$arch" >&2
    exit 1
  }
  # The binary as pip will install it: it runs, and says its version.
  tmp=$(mktemp -d)
  "$TOOLS/bin/python" -m zipfile -e "$whl" "$tmp"
  bin=$tmp/offload_kit-$version.data/scripts/offload-kit
  chmod +x "$bin"
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  got=$("${run[@]}" "$bin" --version)
  rm -rf "$tmp"
  [ "$got" = "offload-kit $version" ] || {
    echo "wheel: the $arch binary says '$got', not 'offload-kit $version'" >&2
    exit 1
  }
  echo "$(basename "$whl"): $(stat -c %s "$whl") bytes; needs ${needed% }; runs: $got"
done
