package shed

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward"
)

var (
	_ ward.Counter = (*Shedder)(nil)
	_ ward.Timed   = (*Shedder)(nil)
)

// TestCounts: driven from one goroutine with an injected clock, the counts are exactly the calls
// made, step by step, and the histogram holds the timed passes with their response times.
func TestCounts(t *testing.T) {
	now := int64(0)
	cpu := 0
	s, err := New(WithClock(func() int64 { return now }), WithCPU(func() int { return cpu }), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	step := func(i int, want ward.Counts) {
		t.Helper()
		if got := s.Counts(); got != want {
			t.Fatalf("step %d: Counts() = %+v, want %+v", i, got, want)
		}
	}
	step(0, ward.Counts{})
	p, _ := s.Allow()
	step(1, ward.Counts{Admitted: 1})
	now += int64(3 * time.Millisecond)
	p.Pass()
	p.Pass() // settled already: nothing
	step(2, ward.Counts{Admitted: 1, Passed: 1})
	q, _ := s.Allow()
	r, _ := s.Allow()
	q.Fail()
	r.Ignore()
	step(3, ward.Counts{Admitted: 3, Passed: 1, Failed: 1, Ignored: 1})
	if err := s.Do(context.Background(), func(context.Context) error { now += int64(time.Microsecond); return nil }); err != nil {
		t.Fatal(err)
	}
	step(4, ward.Counts{Admitted: 4, Passed: 2, Failed: 1, Ignored: 1})
	a, _ := s.Admit(context.Background())
	a.Fail()
	step(5, ward.Counts{Admitted: 5, Passed: 2, Failed: 2, Ignored: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Do(ctx, func(context.Context) error { return nil }) // done already: not counted
	step(6, ward.Counts{Admitted: 5, Passed: 2, Failed: 2, Ignored: 1})

	// hot and full: hold calls, then refuse
	var held []Promise
	for i := 0; i < 110; i++ {
		h, _ := s.Allow()
		held = append(held, h)
	}
	for i := range 10 { // timed settles move the average of calls in flight up
		held[i].Fail()
	}
	held = held[10:]
	cpu = 1000
	for i := 0; i < 10; i++ {
		if _, err := s.Allow(); !errors.Is(err, ErrOverloaded) {
			t.Fatalf("refusal %d: %v", i, err)
		}
	}
	step(7, ward.Counts{Admitted: 115, Refused: 10, Passed: 2, Failed: 12, Ignored: 1})
	for i := range held {
		held[i].Ignore()
	}
	step(8, ward.Counts{Admitted: 115, Refused: 10, Passed: 2, Failed: 12, Ignored: 101})
	if c := s.Counts(); c.Unsettled() != uint64(s.inFlight.load()) || c.Unsettled() != 0 {
		t.Fatalf("unsettled %d, in flight %d", c.Unsettled(), s.inFlight.load())
	}

	l := s.Latency()
	if l.Count != 2 || l.Sum != 3*time.Millisecond+time.Microsecond {
		t.Fatalf("Latency() count %d sum %v, want 2 and 3.001ms", l.Count, l.Sum)
	}
	if b := ward.LatencyBucket(int64(3 * time.Millisecond)); l.Buckets[b] != 1 || l.Buckets[0] != 1 {
		t.Fatalf("buckets %v", l.Buckets)
	}
}

// TestLatencySampled: with the default sampling one admitted call in DefaultSampleEvery on each
// P is timed, and only its pass reaches the histogram: each row times the floor of its admissions
// over DefaultSampleEvery.
func TestLatencySampled(t *testing.T) {
	now := int64(0)
	s, _ := New(WithClock(func() int64 { return now }), WithCPU(func() int { return 0 }))
	const calls = 100 * DefaultSampleEvery
	for i := 0; i < calls; i++ {
		p, _ := s.Allow()
		now += int64(time.Millisecond)
		p.Pass()
	}
	l, c := s.Latency(), s.Counts()
	least := (calls - (DefaultSampleEvery-1)*s.inFlight.rows.Rows()) / DefaultSampleEvery
	if c.Passed != calls || l.Count > calls/DefaultSampleEvery || int(l.Count) < least {
		t.Fatalf("Latency().Count = %d, Passed %d; want %d passed, %d to %d timed", l.Count, c.Passed, calls, least, calls/DefaultSampleEvery)
	}
	if l.Sum != time.Duration(l.Count)*time.Millisecond {
		t.Fatalf("Latency().Sum = %v for %d calls of 1ms", l.Sum, l.Count)
	}
}

// TestCountsConcurrent: many goroutines admitting, refusing and settling at once while a reader
// folds; the counters never go down, and once every call has settled they add up to the calls
// made.
func TestCountsConcurrent(t *testing.T) {
	s, _ := New(WithCPU(func() int { return 950 }), WithRefresh(time.Millisecond))
	const workers, each = 16, 400
	var admitted, refused, passed, failed, ignored [workers]uint64
	var start, done sync.WaitGroup
	start.Add(1)
	for g := 0; g < workers; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < each; i++ {
				p, err := s.Allow()
				if err != nil {
					refused[g]++
					continue
				}
				admitted[g]++
				switch i % 3 {
				case 0:
					p.Pass()
					passed[g]++
				case 1:
					p.Fail()
					failed[g]++
				default:
					p.Ignore()
					ignored[g]++
				}
			}
		}()
	}
	stop := make(chan struct{})
	read := make(chan error)
	go func() {
		var last ward.Counts
		for {
			c := s.Counts()
			if c.Admitted < last.Admitted || c.Refused < last.Refused || c.Passed < last.Passed ||
				c.Failed < last.Failed || c.Ignored < last.Ignored {
				read <- errors.New("a count went down")
				return
			}
			last = c
			select {
			case <-stop:
				read <- nil
				return
			default:
			}
		}
	}()
	start.Done()
	done.Wait()
	close(stop)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	var want ward.Counts
	for g := 0; g < workers; g++ {
		want.Admitted += admitted[g]
		want.Refused += refused[g]
		want.Passed += passed[g]
		want.Failed += failed[g]
		want.Ignored += ignored[g]
	}
	if got := s.Counts(); got != want {
		t.Fatalf("Counts() = %+v, want %+v", got, want)
	}
	if want.Admitted+want.Refused != workers*each {
		t.Fatalf("calls %d, want %d", want.Admitted+want.Refused, workers*each)
	}
}

// TestCountsAllocs: counting allocates nothing.
func TestCountsAllocs(t *testing.T) {
	s, _ := New(WithCPU(func() int { return 0 }), WithSampleEvery(1))
	if a := testing.AllocsPerRun(1000, func() {
		p, _ := s.Allow()
		p.Pass()
		q, _ := s.Allow()
		q.Ignore()
	}); a != 0 {
		t.Fatalf("admit and settle allocate %v", a)
	}
}
