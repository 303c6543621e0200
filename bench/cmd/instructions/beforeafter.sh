#!/bin/sh
# Instructions per call of ward's rows at an older commit and at the working tree, counted by one
# harness (this tree's cmd/instructions and floor probes, laid over the older commit's bench
# package, whose rows call the library as it was then), side by side with the change.
# Usage (from bench/): sh cmd/instructions/beforeafter.sh BEFORE [rows-regexp [n]]
# BEFORE is a commit; rows-regexp picks rows by comparison/impl (default: every ward row); n is
# calls per row (default 50000). Rows the older commit lacks are left out. Needs valgrind.
set -eu
before=$1
rows=${2:-/ward}
n=${3:-50000}
here=$(pwd)
dir=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$dir/tree" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
git -C "$here" worktree add --detach "$dir/tree" "$before" >/dev/null 2>&1
cp cmd/instructions/*.go cmd/instructions/*.s "$dir/tree/bench/cmd/instructions/"
cp floor.go "$dir/tree/bench/"
(cd "$dir/tree/bench" && go build -o "$dir/before" ./cmd/instructions)
go build -o "$dir/after" ./cmd/instructions
(cd "$dir/tree/bench" && "$dir/before" -all -n "$n" -only "$rows") > "$dir/b.txt"
"$dir/after" -all -n "$n" -only "$rows" > "$dir/a.txt"
echo "before: $(git -C "$here" rev-parse --short "$before"), after: $(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet HEAD -- .. || echo ' with uncommitted changes')"
echo "instructions per call (the clean chunks' mean; min: the least chunk), one harness for both"
awk '
	FNR == 1 { file++; seen = 0 }
	/^comparison/ && !seen { inrows = 1; seen = 1; next }
	inrows && NF == 0 { inrows = 0 }
	inrows && NF >= 6 && $1 != "Floor" { key = $1 " " $2; v[file, key] = $3; m[file, key] = $4; if (file == 2) order[++k] = key }
	END {
		printf "%-16s %-14s %10s %10s %10s %10s %8s\n", "comparison", "impl", "before", "after", "min before", "min after", "change"
		for (i = 1; i <= k; i++) {
			key = order[i]
			if (!((1, key) in v)) continue
			split(key, p, " ")
			printf "%-16s %-14s %10.1f %10.1f %10.1f %10.1f %+7.1f%%\n", p[1], p[2], v[1, key], v[2, key], m[1, key], m[2, key], 100 * (v[2, key] - v[1, key]) / v[1, key]
		}
	}' "$dir/b.txt" "$dir/a.txt"
