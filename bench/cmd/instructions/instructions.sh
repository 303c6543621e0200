#!/bin/sh
# Instructions per call of every single-goroutine path of the bench suite, counted by callgrind
# inside cmd/instructions' measure function. GOGC=off and GOMAXPROCS=1 keep the collector and the
# scheduler off the thread (callgrind follows the thread's calls, so a goroutine switch inside
# measure would count another goroutine's work); the measured paths allocate nothing.
# Usage (from bench/): sh cmd/instructions/instructions.sh [n]
set -eu
n=${1:-100000}
bin=$(mktemp -d)/instructions
go build -o "$bin" ./cmd/instructions
printf '%-16s %-26s %12s\n' comparison impl instr/call
"$bin" -list | while read -r c impl; do
	ir=$(GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind --toggle-collect=main.measure \
		--callgrind-out-file=/dev/null "$bin" -c "$c" -impl "$impl" -n "$n" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' || true)
	if [ -n "$ir" ]; then
		printf '%-16s %-26s %12.1f\n' "$c" "$impl" "$(echo "$ir / $n" | bc -l)"
	else
		printf '%-16s %-26s %12s\n' "$c" "$impl" failed
	fi
done
