#!/bin/sh
# cachesim.sh BENCH_BINARY PATTERN: instructions, data-cache misses (first level and last) and
# mispredicted branches (conditional and indirect) a call of one benchmark row at -cpu 1 under
# valgrind's cache and branch simulation (callgrind --cache-sim=yes --branch-sim=yes), from the
# difference between a run of 300,000 calls and one of 100,000 (setup and harness cancel out).
# Deterministic where wall clock is not, and a model: its misses are the simulated caches'. The
# caches are valgrind's guess of this machine's unless CACHESIM_CACHE gives them (valgrind's
# options, e.g. "--D1=49152,12,64 --LL=1048576,16,64": a core's first level and its own second level
# as the last). The runtime's cycle counter is kept off RDTSCP, which valgrind cannot decode (see
# cmd/instructions).
set -e
bin=$1; pat=$2; out=${TMPDIR:-/tmp}/cachesim.$$
for n in 100000 300000; do
	for try in 1 2 3; do # asynchronous preemption (a signal) can end a run under valgrind: off, and a retry
		GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes $CACHESIM_CACHE --callgrind-out-file=$out.$n "$bin" -test.run '^$' -test.bench "$pat" -test.benchtime ${n}x -test.cpu 1 >/dev/null 2>&1 || true
		grep -q '^summary' $out.$n && break
	done
	grep -q '^summary' $out.$n || { echo "cachesim: no profile for $pat at $n calls" >&2; exit 1; }
done
awk -v pat="$pat" '/^summary:/ { f++; for (i = 2; i <= NF; i++) v[f, i] = $i }
	END { printf "%s: Ir %.1f  Dr %.1f  Dw %.1f  D1mr %.2f  D1mw %.2f  DLmr %.2f  DLmw %.2f  Bcm %.2f  Bim %.2f a call\n", pat, (v[2,2]-v[1,2])/200000, (v[2,3]-v[1,3])/200000, (v[2,4]-v[1,4])/200000, (v[2,6]-v[1,6])/200000, (v[2,7]-v[1,7])/200000, (v[2,9]-v[1,9])/200000, (v[2,10]-v[1,10])/200000, (v[2,12]-v[1,12])/200000, (v[2,14]-v[1,14])/200000 }' $out.100000 $out.300000
rm -f $out.100000 $out.300000
