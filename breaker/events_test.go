package breaker

import (
	"errors"
	"testing"
	"time"
)

// TestEvents: the fold tells when the breaker starts refusing and when it stops, once each, with
// the instant of the fold; a nil function is an error; a panicking one does not wedge the refresh.
func TestEvents(t *testing.T) {
	if _, err := New(WithEvents(nil)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WithEvents(nil): %v", err)
	}
	now := int64(0)
	var got []Event
	b, err := New(WithClock(func() int64 { return now }), WithRand(func() float64 { return 0.999 }),
		WithRefresh(0), WithPolicy(RecoveryPolicy()), WithEvents(func(e Event) { got = append(got, e) }))
	if err != nil {
		t.Fatal(err)
	}
	step := int64(10 * time.Millisecond)
	for i := 0; i < 100; i++ { // a dead backend for 1 s
		now += step
		if p, err := b.Allow(); err == nil {
			p.Fail()
		}
	}
	if len(got) != 1 || !got[0].Refusing || got[0].Ratio <= 0 {
		t.Fatalf("after failures: events %+v, want one saying it started refusing", got)
	}
	for i := 0; i < 1000; i++ { // healthy for 10 s
		now += step
		if p, err := b.Allow(); err == nil {
			p.Pass()
		}
	}
	if len(got) != 2 || got[1].Refusing || got[1].At <= got[0].At {
		t.Fatalf("after recovery: events %+v, want a second saying it stopped", got)
	}

	// A panicking events function: the panic reaches the caller, and the next refresh still runs.
	now = 0
	b, _ = New(WithClock(func() int64 { return now }), WithRefresh(0), WithEvents(func(Event) { panic("boom") }))
	func() {
		defer func() { _ = recover() }()
		for i := 0; i < 100; i++ {
			now += step
			if p, err := b.Allow(); err == nil {
				p.Fail()
			}
		}
	}()
	if b.refreshing.Load() != 0 {
		t.Fatal("a panicking events function left the refresh held")
	}
}
