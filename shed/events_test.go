package shed

import (
	"errors"
	"testing"
	"time"
)

// TestEvents: the shedder tells once when it turns hot (from the fold) and once when it cools
// (from the first call that finds it cool); calls in between tell nothing; nil is an error.
func TestEvents(t *testing.T) {
	if _, err := New(WithEvents(nil)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WithEvents(nil): %v", err)
	}
	now, cpu := int64(0), 0
	var got []Event
	s, err := New(WithClock(func() int64 { return now }), WithCPU(func() int { return cpu }),
		WithRefresh(0), WithSampleEvery(1), WithEvents(func(e Event) { got = append(got, e) }))
	if err != nil {
		t.Fatal(err)
	}
	call := func() {
		now += int64(time.Millisecond)
		if p, err := s.Allow(); err == nil {
			p.Pass()
		}
	}
	for i := 0; i < 100; i++ {
		call()
	}
	if len(got) != 0 {
		t.Fatalf("cool: events %+v, want none", got)
	}
	cpu = 950
	for i := 0; i < 100; i++ {
		call()
	}
	if len(got) != 1 || !got[0].Hot || got[0].CPU != 950 || got[0].At != int64(101*time.Millisecond) {
		t.Fatalf("hot: events %+v, want one saying hot at 101ms with CPU 950", got)
	}
	cpu = 100
	for i := 0; i < 100; i++ {
		call()
	}
	if len(got) != 2 || got[1].Hot || got[1].CPU != 100 {
		t.Fatalf("cooled: events %+v, want a second saying cool", got)
	}
}
