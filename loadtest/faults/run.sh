#!/bin/sh
# make loadtest-faults: builds the dependency and the driver, and runs every fault scenario
# (down, failing, partial 30% and 60%, slow, flapping), each client against its own dependency
# port, on loopback only: about four minutes. Results go to loadtest/faults/results/ (README.md,
# faults.svg, raw.json) and the summary tables into the README's fault section.
# FAULTS_SHORT=1: short scenarios (a smoke run of about 80 s), results in a temporary directory,
# printed, nothing committed touched. FAULTS_SCENARIOS=down,flapping: only those.
set -eu
cd "$(dirname "$0")"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/dependency" ./cmd/dependency
go build -o "$bin/driver" ./cmd/driver
if [ -n "${FAULTS_SHORT:-}" ]; then
	"$bin/driver" -dependency "$bin/dependency" -short -out "$bin/results" \
		-scenarios "${FAULTS_SCENARIOS:-}" -command "FAULTS_SHORT=1 make loadtest-faults"
	cat "$bin/results/README.md"
else
	"$bin/driver" -dependency "$bin/dependency" -out results -readme ../../README.md \
		-scenarios "${FAULTS_SCENARIOS:-}" -command "make loadtest-faults"
fi
