#!/usr/bin/env bash
# The README's first command on a fresh clone: `python3 dev.py demo` with the base install only
# (no test or cluster extras), so that a dependency missing from pyproject.toml's base list fails
# here, not on a user's machine.  pip's download cache is shared with the other stages (cheap);
# the clone gets its own .venv and compiles the numba kernels as a first run does.
# Exits non-zero when the install or the demo fails.
set -euo pipefail
cd "$(dirname "$0")/.."

clone="$(mktemp -d "${TMPDIR:-/tmp}/sdc-fresh-clone.XXXXXX")"
trap 'rm -rf "$clone"' EXIT
git clone --quiet --no-hardlinks . "$clone/sdc-pipeline"
cd "$clone/sdc-pipeline"
start=$SECONDS
python3 dev.py demo
test -s results/demo/report.html
test -s results/demo/results.parquet
echo "ci: fresh clone: python3 dev.py demo passed in $((SECONDS - start)) s (install and kernel compilation included)"
