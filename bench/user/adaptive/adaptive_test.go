package adaptive

import "testing"

// TestAllocs: Acquire and Pass or Fail, and a refusal, allocate nothing in a package shaped as a
// user's, through a Limiter and through a Partition.
func TestAllocs(t *testing.T) {
	for name, mk := range map[string]func(limit, every int) (func(func(), uint8) bool, error){"limiter": Gradient, "partition": Partition} {
		t.Run(name, func(t *testing.T) { allocs(t, mk) })
	}
}

func allocs(t *testing.T, mk func(limit, every int) (func(func(), uint8) bool, error)) {
	call, err := mk(1<<20, 8)
	if err != nil {
		t.Fatal(err)
	}
	none := func() {}
	for _, o := range []uint8{0, 1} {
		if n := testing.AllocsPerRun(1000, func() {
			if !call(none, o) {
				t.Fatal("refused under a limit never reached")
			}
		}); n != 0 {
			t.Errorf("outcome %d: %v allocations a call, want 0", o, n)
		}
	}
	one, err := mk(1, 8)
	if err != nil {
		t.Fatal(err)
	}
	inner := func() {
		if one(none, 0) {
			t.Fatal("a second call admitted at a limit of 1")
		}
	}
	if n := testing.AllocsPerRun(1000, func() { one(inner, 0) }); n != 0 {
		t.Errorf("admitted and refused: %v allocations, want 0", n)
	}
}
