package clock

import (
	"testing"
	"unsafe"
)

// TestCountStaysInCountWords: Count writes only the first CountWords words of the row it is
// given, Counted reads its total and Uncount takes one back.
func TestCountStaysInCountWords(t *testing.T) {
	var row [CountWords + 2]int64
	row[CountWords], row[CountWords+1] = 7, 9 // a caller's own words after Count's
	for i, seen := range []int64{5, 5, 5, 6, 6} {
		Count(unsafe.Pointer(&row), seen)
		if got := Counted(unsafe.Pointer(&row)); got != int64(i+1) {
			t.Fatalf("after %d refusals Counted = %d", i+1, got)
		}
	}
	Uncount(unsafe.Pointer(&row))
	if got := Counted(unsafe.Pointer(&row)); got != 4 {
		t.Fatalf("Uncount after 5 refusals: Counted = %d, want 4", got)
	}
	if row[CountWords] != 7 || row[CountWords+1] != 9 {
		t.Fatalf("Count wrote past CountWords: %v", row)
	}
}

// TestUncountRepaces: a refusal taken back leaves the pacing too, so the next refusal is paced as
// the one taken back was (the 9th reads, is taken back, and the 9th again reads).
func TestUncountRepaces(t *testing.T) {
	var row [CountWords]int64
	p := unsafe.Pointer(&row)
	for i := 1; i <= 9; i++ {
		if got, want := Count(p, 5), i == 1 || i == 9; got != want {
			t.Fatalf("refusal %d at one reading: read = %v, want %v", i, got, want)
		}
	}
	Uncount(p)
	if !Count(p, 5) {
		t.Fatal("the 9th refusal again, after the 9th was taken back: no read")
	}
	if Count(p, 5) {
		t.Fatal("the 10th refusal at one reading: read the clock")
	}
	if got := Counted(p); got != 10 {
		t.Fatalf("Counted = %d, want 10", got)
	}
}
