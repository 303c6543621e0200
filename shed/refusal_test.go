package shed

import (
	"testing"
	"time"
)

// overloaded returns a shedder on an injected clock and CPU reading (*now, *cpu), every call
// timed, driven hot and full: a capacity of 50 calls in flight (100 passes of 50 ms in the first
// bucket), then 200 admitted at 100 ms and 20 of them failed (which moves the average of calls in
// flight up to the count), then 10 calls at 150 ms with the CPU at the threshold. It returns how
// many of those 10 were refused, at least one.
func overloaded(t *testing.T) (s *Shedder, now *int64, cpu *int, refused int) {
	t.Helper()
	now, cpu = new(int64), new(int)
	s, err := New(WithClock(func() int64 { return *now }), WithCPU(func() int { return *cpu }), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	var ps []Promise
	for range 100 {
		p, _ := s.Allow()
		ps = append(ps, p)
	}
	*now = 50 * ms
	for i := range ps {
		ps[i].Pass()
	}
	*now = 100 * ms
	ps = ps[:0]
	for range 200 {
		p, err := s.Allow()
		if err != nil {
			t.Fatal("setup: refused while cool")
		}
		ps = append(ps, p)
	}
	for i := range 20 {
		ps[i].Fail()
	}
	*now, *cpu = 150*ms, 900
	for range 10 {
		if _, err := s.Allow(); err != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("setup: hot and 180 in flight over a capacity of 50, yet nothing refused")
	}
	return s, now, cpu, refused
}

// TestRefusalTakenBack: a refusal decided on a stale reading, whose paced clock read finds the
// cool-down over and admits the call after all, is not counted: Counts and Snapshot give exactly
// the refusals the callers saw, before and after the call that was let through.
func TestRefusalTakenBack(t *testing.T) {
	s, now, cpu, seen := overloaded(t)
	check := func(when string) {
		t.Helper()
		if c := s.Counts(); c.Refused != uint64(seen) {
			t.Fatalf("%s: Counts().Refused = %d, want the %d refusals returned", when, c.Refused, seen)
		}
		if n := s.Snapshot().Refused; n != int64(seen) {
			t.Fatalf("%s: Snapshot().Refused = %d, want %d", when, n, seen)
		}
	}
	check("while hot")
	// Cool, and well past the cool-down; no call gets through to move the latest reading, so a
	// refusal decides on the stale one until its paced read finds the time and admits.
	*now, *cpu = 150*ms+2*int64(time.Second), 300
	admitted := false
	for i := 0; i < 16 && !admitted; i++ {
		if _, err := s.Allow(); err != nil {
			seen++
		} else {
			admitted = true
		}
	}
	if !admitted {
		t.Fatal("a cool server past its cool-down refused 16 calls in a row")
	}
	check("after the refusal taken back")
}
