#!/usr/bin/env bash
# Runs the demo session (built by `just demo`) from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./target/debug/verbgate-demo
