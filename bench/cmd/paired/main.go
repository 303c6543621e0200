// Command paired reads the output of benchmarks run in rounds (every implementation once a round,
// one after another, as make bench-pool and the alternating runs do) and compares one
// implementation with each other round by round: its time over theirs in the same round. On a
// shared machine whose speed drifts from one minute to the next, both runs of a round see the
// same machine, so the ratio keeps what the drift blurs in each side's own spread.
//
// For every row (a benchmark's name without its impl= part, GOMAXPROCS suffix kept) and every
// other implementation it prints the rounds paired, the median ratio (below 1: the base is
// faster), the 10th to 90th percentile of the ratios, the rounds the base was faster in, and the
// two-sided sign test's p-value for "as often faster as slower".
//
//	paired -base ward results/pool-contended-linux-amd64.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	base := flag.String("base", "ward", "the implementation compared with each other one")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: paired [-base impl] results.txt")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	runs, err := parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmp := compare(runs, *base)
	if len(cmp) == 0 {
		fmt.Fprintf(os.Stderr, "paired: no row has %s and another implementation\n", *base)
		os.Exit(1)
	}
	fmt.Printf("from: %s\n", flag.Arg(0))
	write(os.Stdout, *base, cmp)
}

// runs holds every row's times, implementation by implementation, in the order they ran.
type runs struct {
	rows  []string // in order of first appearance
	impls map[string][]string
	ns    map[[2]string][]float64 // (row, impl) → ns/op, in file order
}

var (
	benchLine = regexp.MustCompile(`^Benchmark(\S+)\s+\d+\s+([0-9.e+]+) ns/op`)
	procs     = regexp.MustCompile(`-\d+$`)
)

// parse reads go test -bench output; lines that are not results are skipped.
func parse(r io.Reader) (*runs, error) {
	rs := &runs{impls: map[string][]string{}, ns: map[[2]string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		row, impl, ok := split(m[1])
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", sc.Text(), err)
		}
		k := [2]string{row, impl}
		if _, seen := rs.impls[row]; !seen {
			rs.rows = append(rs.rows, row)
		}
		if len(rs.ns[k]) == 0 {
			rs.impls[row] = append(rs.impls[row], impl)
		}
		rs.ns[k] = append(rs.ns[k], v)
	}
	return rs, sc.Err()
}

// split takes the impl= part out of a benchmark's name: the row (the rest, the GOMAXPROCS suffix
// kept) and the implementation.
func split(name string) (row, impl string, ok bool) {
	suffix := procs.FindString(name)
	parts := strings.Split(strings.TrimSuffix(name, suffix), "/")
	for i, p := range parts {
		if v, found := strings.CutPrefix(p, "impl="); found {
			rest := append(slices.Clone(parts[:i]), parts[i+1:]...)
			return strings.Join(rest, "/") + suffix, v, true
		}
	}
	return "", "", false
}

// pair is base against one other implementation on one row.
type pair struct {
	row, other   string
	n            int     // rounds paired
	median       float64 // of base/other
	p10, p90     float64
	faster, ties int     // rounds base was faster in; rounds of equal times
	p            float64 // two-sided sign test
}

// compare pairs base's k-th run of each row with the other implementations' k-th runs.
func compare(rs *runs, base string) []pair {
	var out []pair
	for _, row := range rs.rows {
		b := rs.ns[[2]string{row, base}]
		if len(b) == 0 {
			continue
		}
		for _, other := range rs.impls[row] {
			if other == base {
				continue
			}
			o := rs.ns[[2]string{row, other}]
			n := min(len(b), len(o))
			if n == 0 {
				continue
			}
			ratios := make([]float64, n)
			pr := pair{row: row, other: other, n: n}
			for i := range n {
				ratios[i] = b[i] / o[i]
				switch {
				case b[i] < o[i]:
					pr.faster++
				case b[i] == o[i]:
					pr.ties++
				}
			}
			slices.Sort(ratios)
			pr.median = quantile(ratios, 0.5)
			pr.p10, pr.p90 = quantile(ratios, 0.1), quantile(ratios, 0.9)
			pr.p = signTest(pr.faster, n-pr.ties)
			out = append(out, pr)
		}
	}
	return out
}

// quantile returns the q-quantile of sorted (linear between the two nearest ranks).
func quantile(sorted []float64, q float64) float64 {
	x := q * float64(len(sorted)-1)
	i := int(x)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (x-float64(i))*(sorted[i+1]-sorted[i])
}

// signTest returns the two-sided p-value of k successes in n fair coin flips: twice the smaller
// tail, at most 1.
func signTest(k, n int) float64 {
	if n == 0 {
		return 1
	}
	k = min(k, n-k)
	tail := 0.0
	for i := 0; i <= k; i++ {
		tail += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
	}
	return min(1, 2*tail)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func write(w io.Writer, base string, ps []pair) {
	fmt.Fprintf(w, "paired by round: %s's time over the other's in the same round (below 1: %s faster)\n", base, base)
	rw, ow := len("row"), len("against")
	for _, p := range ps {
		rw, ow = max(rw, len(p.row)), max(ow, len(p.other))
	}
	fmt.Fprintf(w, "%-*s  %-*s  %6s  %7s  %13s  %12s  %11s\n", rw, "row", ow, "against", "rounds", "median", "p10-p90", base+" faster", "sign test p")
	for _, p := range ps {
		sign := fmt.Sprintf("%.4f", p.p)
		if p.p < 0.0001 {
			sign = "<0.0001"
		}
		fmt.Fprintf(w, "%-*s  %-*s  %6d  %7.3f  %6.3f-%6.3f  %5d of %-3d  %11s\n", rw, p.row, ow, p.other, p.n, p.median, p.p10, p.p90, p.faster, p.n, sign)
	}
}
