package rate

import "testing"

// TestAllocs: an admitted Allow and a refused one allocate nothing in a package shaped as a
// user's.
func TestAllocs(t *testing.T) {
	none := func() {}
	for _, burst := range []int{1, 10000} {
		call, err := Bucket(1e9, burst)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(1000, func() {
			if !call(none, 0) {
				t.Fatalf("refused at 1e9 a second, burst %d", burst)
			}
		}); n != 0 {
			t.Errorf("burst %d: %v allocations a call, want 0", burst, n)
		}
	}
	slow, err := Bucket(1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	slow(none, 0) // the burst of one
	if n := testing.AllocsPerRun(1000, func() {
		if slow(none, 0) {
			t.Fatal("admitted over the rate")
		}
	}); n != 0 {
		t.Errorf("refused: %v allocations a call, want 0", n)
	}
}
