package adaptive

import (
	"context"
	"testing"

	"github.com/wardgo/ward"
)

// TestCounts: a limiter's counts, driven from one goroutine, are the calls made; the histogram
// holds every timed call at its bucket; admitting and settling still allocate nothing.
func TestCounts(t *testing.T) {
	now := int64(0)
	rule, _ := NewFixed(2)
	l, err := New(rule, WithClock(func() int64 { return now }), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := l.Acquire()
	b, _ := l.Acquire()
	if _, ok := l.Acquire(); ok {
		t.Fatal("past the limit")
	}
	now += 3000
	a.Pass()
	b.Fail()
	c, _ := l.Acquire()
	c.Ignore()
	p := l.AsPermit()
	p.Acquire(0)
	p.Release(0)
	_ = l.Do(context.Background(), func(context.Context) error { now += 5000; return nil })
	want := ward.Counts{Admitted: 5, Refused: 1, Passed: 2, Failed: 1, Ignored: 2}
	if got := l.Counts(); got != want {
		t.Fatalf("Counts = %+v, want %+v", got, want)
	}
	lat := l.Latency()
	if lat.Count != 3 || lat.Buckets[ward.LatencyBucket(3000)] != 2 || lat.Buckets[ward.LatencyBucket(5000)] != 1 || lat.Sum != 11000 {
		t.Fatalf("Latency = %+v", lat)
	}
	if n := testing.AllocsPerRun(100, func() { ls, _ := l.Acquire(); ls.Pass() }); n != 0 {
		t.Fatalf("Acquire+Pass allocates %v", n)
	}
}

// TestQueueCounts: a Queue counts its own admissions, refusals and settles, through its Slots and
// its Admissions.
func TestQueueCounts(t *testing.T) {
	rule, _ := NewFixed(1)
	l, _ := New(rule)
	q, _ := NewQueue(l, WithQueueSize(1))
	s, _ := q.TryAcquire()
	if _, ok := q.TryAcquire(); ok {
		t.Fatal("past the limit")
	}
	s.Pass()
	s.Pass() // settled already: no count
	h, err := q.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.Fail()
	want := ward.Counts{Admitted: 2, Refused: 1, Passed: 1, Failed: 1}
	if got := q.Counts(); got != want {
		t.Fatalf("Counts = %+v, want %+v", got, want)
	}
}
