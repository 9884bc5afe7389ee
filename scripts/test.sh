#!/usr/bin/env bash
# The README's test command: installs what the tests need, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
  echo "cargo is required (Rust stable)" >&2
  exit 1
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo nextest run --workspace --no-fail-fast --profile ci
