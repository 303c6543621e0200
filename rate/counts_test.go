package rate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward"
)

// countsLimiter is what the counts tests drive: every limiter of the package.
type countsLimiter interface {
	ward.Counter
	Allow() bool
	TakeAt(now int64, n int) (bool, time.Duration)
	Acquire(now int64) bool
	Release(now int64)
	Admit(ctx context.Context) (ward.Admission, error)
	Do(ctx context.Context, fn func(context.Context) error) error
	Counting() bool
}

// countStep is one call at an instant and the counts after it.
type countStep struct {
	at       int64
	op       string // allow, take, acquire, release, admit, do, dead (Admit with a ctx done)
	n        int    // take's tokens
	ok       bool
	admitted uint64
	refused  uint64
}

// runCounts drives l through steps at the instants of now, checking each answer and the counts.
func runCounts(t *testing.T, name string, l countsLimiter, now *int64, steps []countStep) {
	t.Helper()
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	for i, s := range steps {
		*now = s.at
		var ok bool
		switch s.op {
		case "allow":
			ok = l.Allow()
		case "take":
			ok, _ = l.TakeAt(s.at, s.n)
		case "acquire":
			ok = l.Acquire(s.at)
		case "release":
			l.Release(s.at)
			ok = s.ok
		case "admit":
			_, err := l.Admit(context.Background())
			ok = err == nil
		case "dead":
			_, err := l.Admit(dead)
			ok = err == nil
		case "do":
			ok = l.Do(context.Background(), func(context.Context) error { return nil }) == nil
		default:
			t.Fatalf("%s step %d: no op %q", name, i, s.op)
		}
		if ok != s.ok {
			t.Errorf("%s step %d: %s(%d, %d) = %v, want %v", name, i, s.op, s.at, s.n, ok, s.ok)
		}
		want := ward.Counts{Admitted: s.admitted, Refused: s.refused}
		if got := l.Counts(); got != want {
			t.Errorf("%s step %d: after %s(%d, %d) Counts = %+v, want %+v", name, i, s.op, s.at, s.n, got, want)
		}
	}
}

// TestCounts: each limiter built WithCounts (the SlidingLimiter without it too) counts every
// call it admits and refuses, driven from one goroutine at explicit instants: n tokens at once
// are one call, a call with a ctx already done counts nothing, a Release takes nothing back.
func TestCounts(t *testing.T) {
	const s = int64(time.Second)
	var now int64
	clock := WithClock(func() int64 { return now })

	b, err := NewBucketLimiter(1, 2, clock, WithCounts()) // 1 a second, burst 2
	if err != nil {
		t.Fatal(err)
	}
	runCounts(t, "bucket", b, &now, []countStep{
		{0, "allow", 0, true, 1, 0},
		{0, "admit", 0, true, 2, 0},
		{0, "allow", 0, false, 2, 1},
		{0, "dead", 0, false, 2, 1},
		{0, "do", 0, false, 2, 2},
		{s, "do", 0, true, 3, 2},
		{s, "take", 3, false, 3, 3}, // over the burst: never
		{2 * s, "take", -1, true, 4, 3},
		{2 * s, "take", 1, true, 5, 3},
		{2 * s, "acquire", 0, false, 5, 4},
		{2 * s, "release", 0, false, 5, 4},
		{2 * s, "acquire", 0, true, 6, 4},
		{s, "allow", 0, false, 6, 5}, // the clock went back
	})

	now = 0
	sl, err := NewSlidingLimiter(2, 10*time.Second, clock) // counts without WithCounts
	if err != nil {
		t.Fatal(err)
	}
	runCounts(t, "sliding", sl, &now, []countStep{
		{0, "allow", 0, true, 1, 0},
		{0, "take", 3, false, 1, 1},
		{s, "admit", 0, true, 2, 1},
		{s, "dead", 0, false, 2, 1},
		{2 * s, "do", 0, false, 2, 2},
		{2 * s, "acquire", 0, false, 2, 3},
		{2 * s, "release", 0, false, 2, 3},
		{2 * s, "acquire", 0, true, 3, 3},
		{10 * s, "take", 2, false, 3, 4},
		{12 * s, "take", 2, true, 4, 4}, // the stamp of 2 s has left the window: room for 2
		{12 * s, "take", 0, true, 5, 4},
	})

	now = 0
	p, err := NewPeriodLimiter(2, 10*time.Second, true, clock, WithCounts())
	if err != nil {
		t.Fatal(err)
	}
	runCounts(t, "period", p, &now, []countStep{
		{0, "allow", 0, true, 1, 0},
		{0, "take", 3, false, 1, 1},
		{0, "take", 0, true, 2, 1},
		{s, "admit", 0, true, 3, 1},
		{s, "dead", 0, false, 3, 1},
		{2 * s, "do", 0, false, 3, 2},
		{2 * s, "acquire", 0, false, 3, 3},
		{2 * s, "release", 0, false, 3, 3},
		{2 * s, "acquire", 0, true, 4, 3},
		{10 * s, "take", 2, true, 5, 3}, // a new period
		{10 * s, "allow", 0, false, 5, 4},
	})
	if q := p.TakeQuota(10 * s); q != Over {
		t.Errorf("TakeQuota in a spent period = %v, want Over", q)
	}
	if got := p.Counts(); got != (ward.Counts{Admitted: 5, Refused: 5}) {
		t.Errorf("period: after TakeQuota's Over, Counts = %+v, want 5 admitted, 5 refused", got)
	}
	for _, l := range []countsLimiter{b, sl, p} {
		if !l.Counting() {
			t.Errorf("%T: Counting() = false, want true", l)
		}
	}
}

// TestCountsOff: without WithCounts a BucketLimiter and a PeriodLimiter count nothing and say so.
func TestCountsOff(t *testing.T) {
	b, err := NewBucketLimiter(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPeriodLimiter(1, time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []countsLimiter{b, p} {
		l.Allow()
		l.Allow()
		if l.Counting() || l.Counts() != (ward.Counts{}) {
			t.Errorf("%T without WithCounts: Counting() = %v, Counts() = %+v, want false and zero", l, l.Counting(), l.Counts())
		}
	}
}

// TestCountsConcurrent: calls from many goroutines at once, a bucket with a burst large enough to
// lease to Ps included, add up: admitted + refused is every call made, and each equals the
// answers the callers saw.
func TestCountsConcurrent(t *testing.T) {
	const goroutines, calls = 8, 2000
	var mu sync.Mutex
	var tick int64
	clock := WithClock(func() int64 { // every reading 1 µs later: a rate of 1e5 admits about 1 in 10
		mu.Lock()
		defer mu.Unlock()
		tick += int64(time.Microsecond)
		return tick
	})
	mk := map[string]func() (countsLimiter, error){
		"bucket-burst1": func() (countsLimiter, error) { return NewBucketLimiter(1e5, 1, clock, WithCounts()) },
		"bucket-lease":  func() (countsLimiter, error) { return NewBucketLimiter(1e5, 4096, clock, WithCounts()) },
		"sliding":       func() (countsLimiter, error) { return NewSlidingLimiter(10, 100*time.Microsecond, clock) },
		"period": func() (countsLimiter, error) {
			return NewPeriodLimiter(10, 100*time.Microsecond, false, clock, WithCounts())
		},
	}
	for name, newL := range mk {
		l, err := newL()
		if err != nil {
			t.Fatal(err)
		}
		var admitted, refused [goroutines]uint64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range calls {
					var ok bool
					switch i % 3 {
					case 0:
						ok = l.Allow()
					case 1:
						_, err := l.Admit(context.Background())
						ok = err == nil
					default:
						ok, _ = l.TakeAt(l.(interface{ Now() int64 }).Now(), 1)
					}
					if ok {
						admitted[g]++
					} else {
						refused[g]++
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		var want ward.Counts
		for g := range goroutines {
			want.Admitted += admitted[g]
			want.Refused += refused[g]
		}
		got := l.Counts()
		if got != want || got.Admitted+got.Refused != goroutines*calls {
			t.Errorf("%s: Counts = %+v, want %+v (%d calls)", name, got, want, goroutines*calls)
		}
	}
}

// TestCountsAllocs: counting allocates nothing, admitted or refused.
func TestCountsAllocs(t *testing.T) {
	b, _ := NewBucketLimiter(1e9, 1, WithCounts())
	slow, _ := NewBucketLimiter(1e-3, 1, WithCounts())
	p, _ := NewPeriodLimiter(1<<30, time.Hour, false, WithCounts())
	full, _ := NewPeriodLimiter(1, time.Hour, false, WithCounts())
	sl, _ := NewSlidingLimiter(1, time.Hour)
	for _, l := range []countsLimiter{b, slow, p, full, sl} {
		l.Allow()
		if n := testing.AllocsPerRun(1000, func() { l.Allow() }); n != 0 {
			t.Errorf("%T: %v allocations an Allow, want 0", l, n)
		}
	}
}

func ExampleWithCounts() {
	var now int64
	b, _ := NewBucketLimiter(1, 2, WithCounts(), WithClock(func() int64 { return now }))
	for range 3 {
		b.Allow()
	}
	c := b.Counts()
	fmt.Println(c.Admitted, c.Refused)
	// Output: 2 1
}

// TestCountsAgree: a BucketLimiter built WithCounts decides every call as one built without it
// and as a Bucket, over random traces of Allow and TakeAt at the instants move picks (grants,
// refusals, pull-backs after jumps between origins, the ends of the range), and counts exactly
// the answers it gave; the counting never starts leases.
func TestCountsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 11))
	for _, rate := range []float64{1e9, 6e8, 1e6, 7, 1e-3} {
		for _, burst := range []int{1, 3, 1000} {
			start := []int64{0, math.MinInt64, 1_780_000_000_000_000_000}[r.IntN(3)]
			p := newPair(t, rate, burst, start)
			counted, err := NewBucketLimiter(rate, burst, WithCounts(), WithClock(func() int64 { return p.now }))
			if err != nil {
				t.Fatal(err)
			}
			every := 1e9 / rate
			var want ward.Counts
			wait := time.Duration(0)
			for i := range 20_000 {
				var ok, cok bool
				if n := r.IntN(burst+2) - 1; r.IntN(4) == 0 {
					ok, wait = p.b.TakeAt(p.now, n)
					if lok, _ := p.l.TakeAt(p.now, n); lok != ok {
						t.Fatalf("rate %v burst %d step %d: TakeAt(%d, %d) = %v, Bucket %v", rate, burst, i, p.now, n, lok, ok)
					}
					cok, _ = counted.TakeAt(p.now, n)
				} else {
					ok, wait = p.b.TakeAt(p.now, 1)
					if lok := p.l.Allow(); lok != ok {
						t.Fatalf("rate %v burst %d step %d: Allow at %d = %v, Bucket %v", rate, burst, i, p.now, lok, ok)
					}
					cok = counted.Allow()
				}
				if cok != ok {
					t.Fatalf("rate %v burst %d step %d at %d: counted %v, Bucket %v", rate, burst, i, p.now, cok, ok)
				}
				if ok {
					want.Admitted++
				} else {
					want.Refused++
				}
				p.now = move(r, p.now, start, every, burst, wait)
			}
			if got := counted.Counts(); got != want {
				t.Errorf("rate %v burst %d: Counts = %+v, want %+v", rate, burst, got, want)
			}
			if !counted.Counting() || counted.state() != leaseOff || p.l.Counting() {
				t.Errorf("rate %v burst %d: Counting %v (state %d), uncounted Counting %v", rate, burst, counted.Counting(), counted.state(), p.l.Counting())
			}
		}
	}
}
