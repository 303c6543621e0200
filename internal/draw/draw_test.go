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
