package rate

import (
	"testing"
	"time"
)

// takeStep is one row of a Partitioned.Take trace: Take(key, now, n) = ok, wait.
type takeStep struct {
	key  string
	now  int64
	n    int
	ok   bool
	wait time.Duration
}

func runTake[P Permit](t *testing.T, p *Partitioned[P], steps []takeStep) {
	t.Helper()
	for i, s := range steps {
		if ok, wait := p.Take(s.key, s.now, s.n); ok != s.ok || wait != s.wait {
			t.Fatalf("step %d: Take(%q, %v, %d) = %v %v, want %v %v", i, s.key, time.Duration(s.now), s.n, ok, wait, s.ok, s.wait)
		}
	}
}

func TestPartitionedTakeLimiter(t *testing.T) { // TakeAt: the limiters
	p, err := NewPartitioned(0, func(string) *BucketLimiter {
		b, _ := NewBucketLimiter(10, 2, WithClock(func() int64 { return 0 }))
		return b
	})
	if err != nil {
		t.Fatal(err)
	}
	runTake(t, p, []takeStep{
		{"a", 0, 2, true, 0},
		{"a", 0, 1, false, 100 * time.Millisecond},
		{"b", 0, 1, true, 0}, // a key of its own
		{"a", 50 * ms, 1, false, 50 * time.Millisecond},
		{"a", 100 * ms, 1, true, 0},  // exactly one token at 100 ms
		{"a", 100 * ms, -3, true, 0}, // negative costs nothing
		{"a", 100 * ms, 0, true, 0},
		{"a", 60 * ms, 1, false, 140 * time.Millisecond}, // backwards: nothing added
		{"a", 300 * ms, 3, false, Forever},               // more than the burst: never
		{"a", 300 * ms, 2, true, 0},
	})
	if a := testing.AllocsPerRun(1000, func() { p.Take("a", 0, 1) }); a != 0 {
		t.Fatalf("Take of a known key allocates %v", a)
	}
}

func TestPartitionedTakeCore(t *testing.T) { // Take: the pure cores
	sl, err := NewPartitioned(0, func(string) *Sliding { s, _ := NewSliding(2, time.Second); return s })
	if err != nil {
		t.Fatal(err)
	}
	runTake(t, sl, []takeStep{
		{"a", 0, 1, true, 0},
		{"a", 300 * ms, 1, true, 0},
		{"a", 500 * ms, 1, false, 500 * time.Millisecond}, // the event at 0 leaves at 1 s
		{"a", 1000 * ms, 1, true, 0},
		{"a", 1000 * ms, 1, false, 300 * time.Millisecond}, // then the one at 300 ms, at 1.3 s
		{"a", 1000 * ms, 3, false, Forever},
	})
	pe, err := NewPartitioned(0, func(string) *Period { q, _ := NewPeriod(2, time.Second, false); return q })
	if err != nil {
		t.Fatal(err)
	}
	runTake(t, pe, []takeStep{
		{"a", 0, 2, true, 0},
		{"a", 400 * ms, 1, false, 600 * time.Millisecond}, // the period opened at 0 ends at 1 s
		{"b", 400 * ms, 1, true, 0},
		{"a", 1000 * ms, 1, true, 0},
	})
	if a := testing.AllocsPerRun(1000, func() { pe.Take("a", 0, 1) }); a != 0 {
		t.Fatalf("Take of a known key allocates %v", a)
	}
}

// valuePermit is a Permit held by value, wider than a pointer, with no Take: the all-or-nothing path.
type valuePermit struct {
	g    *Gate
	cost int // what an Acquire takes: 1
}

func (v valuePermit) Acquire(now int64) bool {
	for range v.cost - 1 {
		v.g.Acquire(now)
	}
	return v.g.Acquire(now)
}
func (v valuePermit) Release(now int64) { v.g.Release(now) }

func TestPartitionedTakePermit(t *testing.T) { // neither: Acquire n times, wait unknown
	gates := map[string]*Gate{}
	p, err := NewPartitioned(0, func(k string) valuePermit { g, _ := NewGate(2); gates[k] = g; return valuePermit{g: g, cost: 1} })
	if err != nil {
		t.Fatal(err)
	}
	runTake(t, p, []takeStep{
		{"a", 0, 3, false, 0}, // over the ceiling: refused, and the two it had taken released
		{"a", 0, 2, true, 0},
		{"a", 0, 1, false, 0},
		{"a", 0, -1, true, 0},
	})
	if h := gates["a"].Held(); h != 2 {
		t.Fatalf("gate holds %d, want 2", h)
	}
	p.Release("a", 0)
	runTake(t, p, []takeStep{{"a", 0, 1, true, 0}, {"b", 0, 2, true, 0}})
	if a := testing.AllocsPerRun(1000, func() { p.Take("a", 0, 1) }); a != 0 {
		t.Fatalf("Take of a known key allocates %v", a)
	}
}

func TestPartitionedTakeInterface(t *testing.T) { // P an interface: each key's limiter asked by its own type
	p, err := NewPartitioned(0, func(k string) Permit {
		if k == "bucket" {
			b, _ := NewBucket(10, 1, 0)
			return b
		}
		g, _ := NewGate(1)
		return g
	})
	if err != nil {
		t.Fatal(err)
	}
	runTake(t, p, []takeStep{
		{"bucket", 0, 1, true, 0},
		{"bucket", 0, 1, false, 100 * time.Millisecond},
		{"gate", 0, 1, true, 0},
		{"gate", 0, 1, false, 0},
	})
	if a := testing.AllocsPerRun(1000, func() { p.Take("bucket", 0, 1) }); a != 0 {
		t.Fatalf("Take of a known key allocates %v", a)
	}
}
