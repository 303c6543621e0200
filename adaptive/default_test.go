package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
)

func TestDefault(t *testing.T) {
	if _, err := adaptive.NewKnee(adaptive.DefaultKnee()); err != nil {
		t.Fatalf("NewKnee(DefaultKnee()) = %v, want the preset accepted", err)
	}
	a, b := adaptive.Default(), adaptive.Default()
	if a == nil || b == nil {
		t.Fatal("Default() = nil")
	}
	if a == b {
		t.Fatal("Default() returned the same limiter twice, want a fresh one per call")
	}
	p := adaptive.DefaultKnee()
	s := a.Snapshot()
	if s.Limit != p.Initial || s.Min != p.Min || s.Max != p.Max || s.InFlight != 0 {
		t.Fatalf("Default().Snapshot() = %+v, want limit %d in [%d, %d] and nothing in flight", s, p.Initial, p.Min, p.Max)
	}
	// A limit of its own: filling a leaves b untouched.
	var leases []adaptive.Lease
	for range p.Initial {
		l, ok := a.Acquire()
		if !ok {
			t.Fatalf("Default(): call %d of %d refused", len(leases)+1, p.Initial)
		}
		leases = append(leases, l)
	}
	if _, err := a.Admit(context.Background()); !errors.Is(err, adaptive.ErrLimitExceeded) || !errors.Is(err, ward.ErrRefused) {
		t.Fatalf("Admit past the limit = %v, want ErrLimitExceeded matching ward.ErrRefused", err)
	}
	if b.InFlight() != 0 {
		t.Fatalf("second Default() in flight = %d after the first filled, want 0", b.InFlight())
	}
	for i := range leases {
		leases[i].Pass()
	}
	if a.InFlight() != 0 {
		t.Fatalf("in flight after settling = %d, want 0", a.InFlight())
	}
}

// One expression: an adaptive limit at ward's recommended preset.
func ExampleDefault() {
	lim := adaptive.Default()
	err := lim.Do(context.Background(), func(context.Context) error { return nil })
	fmt.Println("limit:", lim.Limit(), "error:", err)
	// Output:
	// limit: 20 error: <nil>
}
