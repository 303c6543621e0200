// Command report turns the raw benchmark files in bench/results into the performance section of
// the README: for every pairing, ward's median ns/op and allocations beside each anchor's at
// -cpu 1 and -cpu 2, and the ratio with its Mann-Whitney p-value (benchstat's test). The README's
// table is written only by this program, between the markers
//
//	<!-- bench:begin --> and <!-- bench:end -->
//
// Only files written by make bench (their "command:" line says so) make the table; the other files
// in bench/results (instruction counts, scaling runs, one-off measurements) are read on their own.
//
// Usage: go run ./cmd/report -results results -readme ../README.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

const (
	begin = "<!-- bench:begin -->"
	end   = "<!-- bench:end -->"
)

// key identifies one sample: the benchmark without its impl, the impl, and GOMAXPROCS.
type key struct {
	bench, impl string
	procs       string
}

type samples struct {
	ns, allocs map[key][]float64
	order      []string // benchmarks in first-seen order
	impls      map[string][]string
	config     map[string]string
}

var procsSuffix = regexp.MustCompile(`-(\d+)$`)

func load(path string) (*samples, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &samples{ns: map[key][]float64{}, allocs: map[key][]float64{}, impls: map[string][]string{}, config: map[string]string{}}
	seenBench, seenImpl := map[string]bool{}, map[string]bool{}
	r := benchfmt.NewReader(f, path)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		for _, c := range res.Config {
			s.config[c.Key] = strings.TrimSpace(string(c.Value))
		}
		name := string(res.Name.Full())
		procs := "1"
		if m := procsSuffix.FindStringSubmatch(name); m != nil {
			procs, name = m[1], strings.TrimSuffix(name, m[0])
		}
		i := strings.Index(name, "/impl=")
		if i < 0 {
			continue
		}
		bench, impl := name[:i], name[i+len("/impl="):]
		k := key{bench, impl, procs}
		if v, ok := res.Value("sec/op"); ok {
			s.ns[k] = append(s.ns[k], v*1e9)
		} else if v, ok := res.Value("ns/op"); ok {
			s.ns[k] = append(s.ns[k], v)
		}
		if v, ok := res.Value("allocs/op"); ok {
			s.allocs[k] = append(s.allocs[k], v)
		}
		if !seenBench[bench] {
			seenBench[bench] = true
			s.order = append(s.order, bench)
		}
		if !seenImpl[bench+"\x00"+impl] {
			seenImpl[bench+"\x00"+impl] = true
			s.impls[bench] = append(s.impls[bench], impl)
		}
	}
	return s, r.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return benchmath.AssumeNothing.Summary(benchmath.NewSample(v, &benchmath.DefaultThresholds), 0.95).Center
}

func ns(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio is anchor over ward with the p-value of their difference; "~" when it is not significant.
func ratio(s *samples, bench, impl, procs string) string {
	w, a := s.ns[key{bench, "ward", procs}], s.ns[key{bench, impl, procs}]
	if len(w) == 0 || len(a) == 0 {
		return "–"
	}
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(w, &benchmath.DefaultThresholds), benchmath.NewSample(a, &benchmath.DefaultThresholds))
	r := median(a) / median(w)
	if c.P >= c.Alpha {
		return fmt.Sprintf("~ (p=%.2f n=%d)", c.P, len(w))
	}
	return fmt.Sprintf("**%.1f×** (p=%.3f n=%d)", r, c.P, len(w))
}

func section(path string, s *samples) string {
	var b strings.Builder
	name := strings.TrimSuffix(filepath.Base(path), ".txt")
	fmt.Fprintf(&b, "#### %s\n\n", name)
	for _, k := range []string{"cpu", "go", "command", "rounds", "date"} {
		if v := s.config[k]; v != "" {
			fmt.Fprintf(&b, "- %s: `%s`\n", k, v)
		}
	}
	b.WriteString("\nns/op medians; the ratio is the anchor's time over ward's, with the Mann-Whitney U p-value (benchstat's test; `~` where the difference is not significant). allocs/op after the slash.\n\n")
	b.WriteString("| benchmark | impl | ward -cpu 1 | impl -cpu 1 | ratio -cpu 1 | ward -cpu 2 | impl -cpu 2 | ratio -cpu 2 |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, bench := range s.order {
		for _, impl := range s.impls[bench] {
			if impl == "ward" {
				continue
			}
			row := []string{bench, impl}
			for _, p := range []string{"1", "2"} {
				w, a := key{bench, "ward", p}, key{bench, impl, p}
				row = append(row,
					fmt.Sprintf("%s / %s", ns(median(s.ns[w])), allocs(s.allocs[w])),
					fmt.Sprintf("%s / %s", ns(median(s.ns[a])), allocs(s.allocs[a])),
					ratio(s, bench, impl, p))
			}
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	}
	return b.String()
}

func allocs(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", median(v))
}

func main() {
	dir := flag.String("results", "results", "directory of raw benchmark files (<goos>-<goarch>-<cpu>.txt)")
	readme := flag.String("readme", "../README.md", "README to rewrite between the bench markers")
	flag.Parse()
	files, _ := filepath.Glob(filepath.Join(*dir, "*.txt"))
	sort.Strings(files)
	var out strings.Builder
	out.WriteString(begin + "\n")
	out.WriteString("_Generated by `make bench-report` from the raw files in `bench/results/`; do not edit by hand._\n\n")
	arm := false
	for _, f := range files {
		if strings.HasSuffix(f, "-benchstat.txt") {
			continue
		}
		if strings.Contains(filepath.Base(f), "-arm64-") {
			arm = true
		}
		s, err := load(f)
		if err != nil {
			log.Fatalf("%s: %v", f, err)
		}
		// Only the comparison suite's runs (written by make bench) make the table; the other files
		// in results/ (instructions, scaling, one-off measurements) are read on their own.
		if !strings.HasPrefix(s.config["command"], "make bench ") {
			continue
		}
		out.WriteString(section(f, s))
		out.WriteString("\n")
	}
	if !arm {
		out.WriteString("arm64: not yet measured. `make bench` on a real arm64 machine (Graviton) writes its own results file; emulated timings are never published.\n")
	}
	out.WriteString(end)
	old, err := os.ReadFile(*readme)
	if err != nil {
		log.Fatal(err)
	}
	i, j := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
	if i < 0 || j < i {
		log.Fatalf("%s has no %s ... %s markers", *readme, begin, end)
	}
	updated := append(append(append([]byte{}, old[:i]...), out.String()...), old[j+len(end):]...)
	if err := os.WriteFile(*readme, updated, 0o644); err != nil {
		log.Fatal(err)
	}
}
