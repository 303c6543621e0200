package pool

import (
	"context"
	"testing"
)

// TestAllocs: Acquire and Release of an idle resource allocate nothing in a package shaped as a
// user's (the shape in which the pool once allocated 8 B a call while the bench module showed 0).
func TestAllocs(t *testing.T) {
	borrow, closePool, err := Borrow(8)
	if err != nil {
		t.Fatal(err)
	}
	defer closePool()
	ctx := context.Background()
	none := func() {}
	if err := borrow(ctx, none); err != nil { // the first Acquire opens the resource
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if err := borrow(ctx, none); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per Acquire+Release, want 0", n)
	}
}
