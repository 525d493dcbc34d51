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
export PATH="$HOME/.cargo/bin:$PATH"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --locked --release 2>&1 | tee target/test.log
echo "== fuzz bodies over fixtures (also part of cargo test)"
echo "== done"
