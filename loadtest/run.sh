#!/bin/sh
# make loadtest: builds the example service and the open-loop driver (the standard library only),
# and drives the service from the driver, a separate process, at a fixed arrival rate of 0.5x, 1x,
# 2x and 4x its capacity, unprotected and under each protection, on loopback only; then Knee from
# a cold start and the shedder on a CPU-bound service of one CPU under a step overload. Results go
# to loadtest/results/ (README.md, loadtest.svg, raw.json). LOADTEST_SECONDS sets each cell's
# measured seconds (default 6; each cell adds 6 s of warm-up, LOADTEST_WARMUP). About six minutes in all.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/service" ./loadtest/service
go build -o "$bin/driver" ./loadtest/driver
"$bin/driver" -service "$bin/service" -out loadtest/results -seconds "${LOADTEST_SECONDS:-6}" -warmup "${LOADTEST_WARMUP:-6s}"
