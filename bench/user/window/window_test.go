package window

import (
	"testing"
	"time"
)

// TestAllocs: a clock read and an Add allocate nothing in a package shaped as a user's.
func TestAllocs(t *testing.T) {
	call, err := Striped(40, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	none := func() {}
	if n := testing.AllocsPerRun(1000, func() { call(none, 0) }); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
}
