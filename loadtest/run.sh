#!/bin/sh
# make loadtest: builds the example service and the driver, and drives the service with wrk at
# 0.5x, 1x, 2x and 4x its capacity, unprotected and under each protection, on loopback only.
# Results go to loadtest/results/ (README.md, loadtest.svg, raw.json). LOADTEST_SECONDS sets each
# cell's measured seconds (default 8; each cell adds 3 s of warm-up).
set -eu
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "loadtest: wrk not found (apt-get install wrk)"; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/service" ./loadtest/service
go build -o "$bin/driver" ./loadtest/driver
"$bin/driver" -service "$bin/service" -lua loadtest/load.lua -out loadtest/results -seconds "${LOADTEST_SECONDS:-8}"
