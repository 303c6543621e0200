package draw

import (
	"math"
	"testing"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{math.NaN(), 0}, {-1, 0}, {math.Inf(-1), 0}, {0, 0}, {0.25, 0.25}, {1, below1}, {math.Inf(1), below1},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if f := Func(func() float64 { return 7 }); f() != below1 {
		t.Error("Func does not clean")
	}
	for i := 0; i < 1000; i++ {
		if r := Func(nil)(); r < 0 || r >= 1 {
			t.Fatalf("default draw %v outside [0, 1)", r)
		}
	}
}

// TestSplitSequence: Split is splitmix64 (the reference sequence from state 0: Vigna's
// splitmix64.c gives 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f first) with its
// 53 high bits as the draw, and it advances the state by the increment.
func TestSplitSequence(t *testing.T) {
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	x := uint64(0)
	for i, w := range want {
		x += gamma
		if got := mix(x); got != w {
			t.Fatalf("output %d = %#x, want %#x", i, got, w)
		}
	}
	g := uint64(gamma)
	s := int64(g) // the state after one step from 0: Split does not reseed it
	for i, w := range want[1:] {
		if got, want := Split(&s), float64(w>>11)*0x1p-53; got != want {
			t.Fatalf("draw %d = %v, want %v", i+1, got, want)
		}
	}
	if uint64(s) != 3*g {
		t.Fatalf("state %#x after two steps from gamma, want %#x", uint64(s), 3*g)
	}
}

// TestSplitSeedsAndRange: a zero state is seeded (two zero states run different sequences), every
// draw lies in [0, 1) on the 2^-53 grid, and a million draws from a fixed state spread evenly over
// 16 buckets (each within 1% of its share, 2.6 standard deviations of a true uniform) with their
// mean within 0.002 of 0.5 (7 standard deviations).
func TestSplitSeedsAndRange(t *testing.T) {
	var a, b int64
	if Split(&a) == Split(&b) && Split(&a) == Split(&b) {
		t.Fatal("two zero states drew the same sequence: not seeded")
	}
	if a == 0 || b == 0 {
		t.Fatal("a zero state stayed zero")
	}
	s := int64(12345)
	var n [16]int
	sum := 0.0
	const draws = 1 << 20
	for i := 0; i < draws; i++ {
		r := Split(&s)
		if !(r >= 0 && r < 1) {
			t.Fatalf("draw %v outside [0, 1)", r)
		}
		if k := r * 0x1p53; k != math.Trunc(k) {
			t.Fatalf("draw %v is not a multiple of 2^-53", r)
		}
		n[int(r*16)]++
		sum += r
	}
	for i, c := range n {
		if d := math.Abs(float64(c) - draws/16); d > draws/16/100 {
			t.Errorf("bucket %d holds %d draws, want %d ± 1%%", i, c, draws/16)
		}
	}
	if m := sum / draws; math.Abs(m-0.5) > 0.002 {
		t.Errorf("mean %v, want 0.5 ± 0.002", m)
	}
}
