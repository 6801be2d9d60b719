#!/usr/bin/env bash
# Build the CUDA image with its labels taken from the series: the pinned TVM commit and the
# series digest (the same digest the wheel's local version carries). Extra arguments go to
# `docker build` (e.g. --build-arg TVM_SOURCE=<mirror> -t tvmfork:cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
read -r commit digest < <("$PY" -m tvmfork labels)
exec docker build \
  --build-arg TVM_COMMIT="$commit" \
  --build-arg SERIES_DIGEST="$digest" \
  "$@" .
