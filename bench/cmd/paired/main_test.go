package main

import (
	"math"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct{ name, row, impl string }{
		{"Contended/goroutines=8x/impl=ward-2", "Contended/goroutines=8x-2", "ward"},
		{"Contended/goroutines=8x/impl=chan", "Contended/goroutines=8x", "chan"},
		{"KeyLookup/impl=xsync-mapof-counted-2", "KeyLookup-2", "xsync-mapof-counted"},
		{"Rate/impl=uber-ratelimit/work=none-16", "Rate/work=none-16", "uber-ratelimit"},
	} {
		row, impl, ok := split(c.name)
		if !ok || row != c.row || impl != c.impl {
			t.Errorf("split(%q) = %q, %q, %v; want %q, %q", c.name, row, impl, ok, c.row, c.impl)
		}
	}
	if _, _, ok := split("Window-2"); ok {
		t.Error("a name with no impl= part split")
	}
}

// Two rounds of a run, the base slower in one row and faster in the other, with lines that are
// not results among them: every ratio is the round's own.
func TestCompare(t *testing.T) {
	const out = `goos: linux
BenchmarkX/n=1/impl=ward     	100	 10.0 ns/op	 0 B/op
BenchmarkX/n=1/impl=other    	100	 20.0 ns/op
BenchmarkX/n=1/impl=ward-2   	100	 30.0 ns/op
BenchmarkX/n=1/impl=other-2  	100	 15.0 ns/op
PASS
BenchmarkX/n=1/impl=ward     	100	 40.0 ns/op
BenchmarkX/n=1/impl=other    	100	 50.0 ns/op
BenchmarkX/n=1/impl=ward-2   	100	 20.0 ns/op
BenchmarkX/n=1/impl=other-2  	100	 10.0 ns/op
`
	rs, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	ps := compare(rs, "ward")
	if len(ps) != 2 {
		t.Fatalf("%d pairs, want 2: %+v", len(ps), ps)
	}
	one, two := ps[0], ps[1]
	if one.row != "X/n=1" || one.other != "other" || one.n != 2 || one.faster != 2 || one.median != (0.5+0.8)/2 {
		t.Errorf("first row %+v: want X/n=1 against other, 2 rounds, faster in both, median 0.65", one)
	}
	if two.row != "X/n=1-2" || two.faster != 0 || two.median != 2 || two.p10 != 2 || two.p90 != 2 {
		t.Errorf("second row %+v: want X/n=1-2, slower in both, every ratio 2", two)
	}
	var b strings.Builder
	write(&b, "ward", ps)
	if !strings.Contains(b.String(), "X/n=1-2") || !strings.Contains(b.String(), "0.650") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 0.5: 3, 1: 5, 0.1: 1.4, 0.9: 4.6} {
		if got := quantile(s, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		k, n int
		p    float64
	}{
		{0, 10, 2.0 / 1024},  // every flip one way
		{10, 10, 2.0 / 1024}, // and the other
		{5, 10, 1},
		{1, 10, 2 * 11.0 / 1024},
		{18, 20, 2 * 211.0 / 1048576},
		{0, 0, 1},
	} {
		if got := signTest(c.k, c.n); math.Abs(got-c.p) > 1e-9 {
			t.Errorf("signTest(%d, %d) = %v, want %v", c.k, c.n, got, c.p)
		}
	}
}
