#!/usr/bin/env bash
# Runs everything: set-up, formatting, lints, unit tests, and the tests in
# linker-tests/ that run the real LLVM 22 tools.
#
#   bash scripts/test.sh                  # a missing tool makes its tests "ignored"
#   bash scripts/test.sh --require-tools  # a missing tool fails the run (CI)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ "${1:-}" = "--require-tools" ]; then
  export OFFLOAD_KIT_REQUIRE_TOOLS=1
fi

bash scripts/setup.sh
echo "== every external tool comes from a package setup.sh installs"
bash scripts/check-packages.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -q
echo "== the public API is the one listed in docs/public-api.txt"
python3 scripts/public-api.py
echo "== the modules form layers: no import circles, only cli imports cli; no new circle of files or format module importing files or printing"
python3 scripts/module-graph.py
echo "== no source file over 800 lines"
python3 scripts/check-sizes.py
echo "== rust-version: README.md says it, and rustc is not older"
# README.md's "with Rust X or later" must be Cargo.toml's rust-version, and
# the rustc here must be that version or newer (cargo refuses an older one
# too; this says so first, in these words). Only a rustc of exactly
# rust-version shows that the crate builds with it: a newer one is named.
rust_version=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
readme_version=$(sed -n 's/.*with Rust \([0-9][0-9.]*\) or later.*/\1/p' README.md)
[ -n "$rust_version" ] && [ "$rust_version" = "$readme_version" ] ||
  { echo "Cargo.toml's rust-version is '$rust_version', README.md says Rust '$readme_version' or later"; exit 1; }
rustc_version=$(rustc --version | sed -n 's/^rustc \([0-9][0-9.]*\).*/\1/p')
oldest=$(printf '%s\n%s\n' "$rust_version" "$rustc_version" | sort -V | head -n 1)
[ -n "$rustc_version" ] && [ "$oldest" = "$rust_version" ] ||
  { echo "rustc $rustc_version is older than Cargo.toml's rust-version $rust_version"; exit 1; }
case "$rustc_version" in
  "$rust_version" | "$rust_version".*) echo "rust-version: $rust_version, as README.md says; rustc $rustc_version builds it" ;;
  *) echo "rust-version: $rust_version, as README.md says; rustc $rustc_version is newer (the build does not show that $rust_version builds it)" ;;
esac
echo "== the library alone: no command-line dependencies, bundled zstd"
cargo build --locked --lib --no-default-features -q
echo "== the library with files alone: file-level operations, no command-line dependencies"
cargo build --locked --lib --no-default-features --features files -q
echo "== cargo test"
mkdir -p target
# The tests' temporary files (and those LLVM's tools leave behind when they
# fail) go to a directory of their own, removed at the end.
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/offload-kit-tests.XXXXXX")
trap 'rm -rf "$TEST_TMP"' EXIT
export TMPDIR=$TEST_TMP
# The `ci` profile (Cargo.toml): release's optimizations without the
# shipped binary's LTO, which would take minutes per test binary.
cargo test --locked --profile ci 2>&1 | tee target/test.log
echo "== the README's first command"
OFFLOAD_KIT_PROFILE=ci bash scripts/demo.sh >target/demo.log 2>&1 || { cat target/demo.log; echo "demo failed"; exit 1; }
echo "demo: ok (log in target/demo.log)"
echo "== the wheel: built, installed into a fresh venv, run"
# scripts/wheel.sh with the tests' profile (it reuses their build; the
# wheel's own features add zstd's bundled copy), then pip, offline, from the
# file, into a venv of Debian's python3.
wheel_start=$SECONDS
PROFILE=ci bash scripts/wheel.sh "$TEST_TMP/dist" x86_64 >target/wheel.log 2>&1 ||
  { cat target/wheel.log; echo "wheel: scripts/wheel.sh failed"; exit 1; }
/usr/bin/python3 -m venv "$TEST_TMP/venv"
"$TEST_TMP/venv/bin/python" -m pip install -q --no-index --disable-pip-version-check \
  "$TEST_TMP"/dist/offload_kit-*_x86_64.whl
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
got=$("$TEST_TMP/venv/bin/offload-kit" --version)
[ "$got" = "offload-kit $version" ] ||
  { echo "wheel: the installed offload-kit --version says '$got', not 'offload-kit $version'"; exit 1; }
# An object holding five OffloadBinary images; the listing names each.
inspect=$("$TEST_TMP/venv/bin/offload-kit" inspect fixtures/offload_binary/embedded.o)
for want in "5 device image(s)" "gfx90a:xnack+" "sm_80" "sm_70" "x86_64-unknown-linux-gnu" "spirv64-intel-unknown"; do
  grep -qF -- "$want" <<<"$inspect" ||
    { printf '%s\n' "$inspect"; echo "wheel: the installed offload-kit inspect does not list '$want'"; exit 1; }
done
echo "wheel: ok, $(basename "$TEST_TMP"/dist/offload_kit-*_x86_64.whl) installed and run ($((SECONDS - wheel_start)) s; log in target/wheel.log)"
# One closing line with the totals of every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' target/test.log
