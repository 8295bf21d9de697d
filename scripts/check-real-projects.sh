#!/usr/bin/env bash
# Check the npm/vitest/jest/tsc/eslint/go/ruff verbs against real public
# projects nobody here wrote: each verb's findings or outcomes must equal
# the tool's own JSON on that project (scripts/check_real_projects.py says
# which projects and compares). The projects are fetched from the npm and
# PyPI registries into target/real-projects, never committed; rerun at will
# (they are fetched once). `scripts/check-real-projects.sh go ruff` runs
# only those checks.
set -euo pipefail
cd "$(dirname "$0")/.."
just test-tools build >&2
exec target/py/bin/python scripts/check_real_projects.py "$@"
