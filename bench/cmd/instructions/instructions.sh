#!/bin/sh
# Instructions per call of every single-goroutine path of the bench suite and of the floor probes,
# counted by callgrind (cmd/instructions -all: how a row is counted is in its package doc). A row
# that was not measured, or measured implausibly, fails the run.
# Usage (from bench/): sh cmd/instructions/instructions.sh [n [results-file]]
# With a results file, a run with every row measured replaces it; a failed run leaves it as it was.
set -eu
n=${1:-50000}
out=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/instructions" ./cmd/instructions
if [ -z "$out" ]; then
	exec "$dir/instructions" -all -n "$n"
fi
status=0
{
	echo "command: (cd bench && sh cmd/instructions/instructions.sh $n $out), what make bench-instructions runs"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "go: $(go version)"
	echo "valgrind: $(valgrind --version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "uncommitted changes in: $(git -C .. status --short 2>/dev/null | awk '{print $2}' | cut -d/ -f1 | sort -u | tr '\n' ' ')"
	"$dir/instructions" -all -n "$n" || status=$?
} > "$dir/out"
cat "$dir/out"
if [ "$status" -eq 0 ]; then
	cp "$dir/out" "$out"
else
	echo "instructions: some rows failed; $out left as it was" >&2
fi
exit "$status"
