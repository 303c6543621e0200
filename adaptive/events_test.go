package adaptive

import (
	"errors"
	"testing"
	"time"
)

// TestEvents: a closing window that moves the limit tells once, with the limits before and
// after; calls that close no window, and windows that leave the limit where it was, tell nothing.
func TestEvents(t *testing.T) {
	fixed, _ := NewFixed(4)
	if _, err := New(fixed, WithEvents(nil)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WithEvents(nil): %v", err)
	}
	p := DefaultAIMD()
	p.Initial, p.Min = 100, 10
	rule, err := NewAIMD(p)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(0)
	var got []Event
	l, err := New(rule, WithClock(func() int64 { return now }), WithSampleEvery(1),
		WithEvents(func(e Event) { got = append(got, e) }))
	if err != nil {
		t.Fatal(err)
	}
	start := l.Limit()
	calls := 0
	for len(got) < 3 && calls < 100000 {
		now += int64(time.Millisecond)
		lease, ok := l.Acquire()
		if !ok {
			t.Fatal("refused while nothing is in flight")
		}
		now += int64(time.Millisecond)
		lease.Fail() // an overload: AIMD backs off at each window
		calls++
	}
	if len(got) != 3 {
		t.Fatalf("%d calls told %d events, want 3", calls, len(got))
	}
	if got[0].Previous != start || got[0].Limit >= start || got[1].Previous != got[0].Limit {
		t.Fatalf("events %+v from limit %d: want each to start where the last ended, going down", got, start)
	}
	if calls < 3*10 {
		t.Fatalf("%d calls for 3 windows: a window needs at least its samples", calls)
	}
}
