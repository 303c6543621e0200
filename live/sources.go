package live

import (
	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
)

// Units the typed methods report in.
const (
	unitCalls    = "calls"
	unitRate     = "calls/s"
	unitMS       = "ms"
	unitPercent  = "%"
	unitFraction = "fraction"
)

func nilArg(what string) error { return contract.Field(ErrInvalid, "guard", "nil", what) }

// What a guard's counts show: which of the optional series it has.
const (
	showSettled   = 1 << iota // passed, failed, ignored: the guard settles its calls
	showAbandoned             // abandoned: the guard's callers wait
)

// counts returns a read of g's [ward.Counts], when g is a ward.Counter, and of its latency, when
// it is a ward.Timed, to call from a typed method's read; nil when g is neither.
// Admitted and refused are counters, as are abandoned and the settled outcomes when show asks
// for them; latency is the mean response time, in milliseconds, of the calls timed between two
// samples.
func counts(g any, show int) func(*Readings) {
	c, counter := g.(ward.Counter)
	t, timed := g.(ward.Timed)
	if !counter && !timed {
		return nil
	}
	var last ward.Latency // the histogram at the last sample: read under the Page's lock
	return func(r *Readings) {
		if counter {
			k := c.Counts()
			r.Counter("admitted", unitRate, float64(k.Admitted))
			r.Counter("refused", unitRate, float64(k.Refused))
			if show&showAbandoned != 0 {
				r.Counter("abandoned", unitRate, float64(k.Abandoned))
			}
			if show&showSettled != 0 {
				r.Counter("passed", unitRate, float64(k.Passed))
				r.Counter("failed", unitRate, float64(k.Failed))
				r.Counter("ignored", unitRate, float64(k.Ignored))
			}
		}
		if timed {
			l := t.Latency()
			mean := nan
			if n := l.Count - last.Count; l.Count > last.Count {
				mean = float64(l.Sum-last.Sum) / float64(n) / 1e6
			}
			last = l
			r.Gauge("latency mean", unitMS, mean)
		}
	}
}

// withCounts returns read followed by the read of g's counts (see counts).
func withCounts(read func(*Readings), g any, show int) func(*Readings) {
	more := counts(g, show)
	if more == nil {
		return read
	}
	return func(r *Readings) { read(r); more(r) }
}

// Guard shows any guard that counts ([ward.Counter]: a rate limiter, a retry budget, a guard of
// your own) under name and kind: admitted and refused as counters, with passed, failed and
// ignored; and the mean latency when it is a [ward.Timed].
func (p *Page) Guard(name, kind string, g ward.Counter) error {
	if isNil(g) {
		return nilArg("a ward.Counter")
	}
	return p.add(name, kind, counts(g, showSettled))
}

// Limiter shows an adaptive limiter: limit, in flight and latency (the last closed window's
// average response time, milliseconds) as gauges, refused as a counter.
func (p *Page) Limiter(name string, l *adaptive.Limiter) error {
	if l == nil {
		return nilArg("an *adaptive.Limiter")
	}
	return p.add(name, "adaptive limiter", withCounts(func(r *Readings) {
		s := l.Snapshot()
		r.Gauge("limit", unitCalls, float64(s.Limit))
		r.Gauge("in flight", unitCalls, float64(s.InFlight))
		r.Gauge("latency", unitMS, float64(s.Latency.Nanoseconds())/1e6)
	}, l, showSettled))
}

// Queue shows an adaptive queue's waiting line: the calls waiting for a slot. Show the queue's
// limiter with [Page.Limiter] beside it.
func (p *Page) Queue(name string, q *adaptive.Queue) error {
	if q == nil {
		return nilArg("an *adaptive.Queue")
	}
	return p.add(name, "adaptive queue", withCounts(func(r *Readings) {
		r.Gauge("waiting", unitCalls, float64(q.Waiting()))
	}, q, showSettled|showAbandoned))
}

// Partition shows one partition of an adaptive limit: its calls in flight and the calls it is
// guaranteed at the current limit.
func (p *Page) Partition(name string, part *adaptive.Partition) error {
	if part == nil {
		return nilArg("an *adaptive.Partition")
	}
	return p.add(name, "adaptive partition", withCounts(func(r *Readings) {
		r.Gauge("in flight", unitCalls, float64(part.InFlight()))
		r.Gauge("guarantee", unitCalls, float64(part.Guarantee()))
	}, part, showSettled))
}

// Breaker shows a breaker: ratio (the share of calls it refuses now, 0 while healthy) and its
// window's successes, failures and drops as gauges, refused as a counter.
func (p *Page) Breaker(name string, b *breaker.Breaker) error {
	if b == nil {
		return nilArg("a *breaker.Breaker")
	}
	return p.add(name, "breaker", withCounts(func(r *Readings) {
		s := b.Snapshot()
		r.Gauge("ratio", unitFraction, s.Ratio)
		r.Gauge("successes in window", unitCalls, float64(s.Successes))
		r.Gauge("failures in window", unitCalls, float64(s.Failures))
		r.Gauge("drops in window", unitCalls, float64(s.Drops))
	}, b, showSettled))
}

// Shedder shows a shedder: CPU (percent; a gap while unknown), in flight, the moving average of
// in flight, capacity (the calls in flight the window shows the server carries) and hot (1 when
// a call now would find the server hot, else 0) as gauges, refused as a counter.
func (p *Page) Shedder(name string, s *shed.Shedder) error {
	if s == nil {
		return nilArg("a *shed.Shedder")
	}
	return p.add(name, "shedder", withCounts(func(r *Readings) {
		sn := s.Snapshot()
		cpu := float64(sn.CPU) / 10
		if sn.CPU < 0 {
			cpu = nan
		}
		hot := 0.0
		if sn.Hot {
			hot = 1
		}
		r.Gauge("cpu", unitPercent, cpu)
		r.Gauge("in flight", unitCalls, float64(sn.InFlight))
		r.Gauge("average in flight", unitCalls, sn.Average)
		r.Gauge("capacity", unitCalls, sn.Capacity)
		r.Gauge("hot", "", hot)
		// a Shedder always counts: the counts' refused, read next, replace this value; reporting
		// it here only places refused after hot on the card
		r.Counter("refused", unitRate, float64(sn.Refused))
	}, s, showSettled))
}

// PoolStats is what [Page.Pool] reads: a *pool.Pool of any resource type.
type PoolStats interface {
	Stats() pool.Stats
	ward.Counter
}

// Pool shows a pool: lent (the resources in use), idle, live, making and waiting as gauges,
// opened, failed and closed as counters.
func (p *Page) Pool(name string, pl PoolStats) error {
	if isNil(pl) {
		return nilArg("a *pool.Pool")
	}
	return p.add(name, "pool", withCounts(func(r *Readings) {
		s := pl.Stats()
		r.Gauge("lent", "resources", float64(s.Lent))
		r.Gauge("idle", "resources", float64(s.Idle))
		r.Gauge("live", "resources", float64(s.Live))
		r.Gauge("making", "resources", float64(s.Making))
		r.Gauge("waiting", unitCalls, float64(s.Waiting))
		r.Counter("opened", "opens/s", float64(s.Opened))
		r.Counter("failed", "opens/s", float64(s.Failed))
		r.Counter("closed", "closes/s", float64(s.Closed))
	}, pl, showSettled|showAbandoned))
}

// FailureWindow shows a failure window: keys and failures stored as gauges, evictions and
// uncounted failures as counters.
func (p *Page) FailureWindow(name string, w *failurewindow.Window) error {
	if w == nil {
		return nilArg("a *failurewindow.Window")
	}
	return p.add(name, "failure window", withCounts(func(r *Readings) {
		s := w.Snapshot()
		r.Gauge("keys", "keys", float64(s.Keys))
		r.Gauge("stored", "failures", float64(s.Stored))
		r.Counter("evictions", "keys/s", float64(s.Evictions))
		r.Counter("uncounted", "failures/s", float64(s.Uncounted))
	}, w, showSettled))
}

// Bucket shows a token bucket's tokens, fractions included, at the limiter's own clock.
func (p *Page) Bucket(name string, b *rate.BucketLimiter) error {
	if b == nil {
		return nilArg("a *rate.BucketLimiter")
	}
	var g any // a bucket built without rate.WithCounts counts nothing: no series for it
	if b.Counting() {
		g = b
	}
	return p.add(name, "rate bucket", withCounts(func(r *Readings) {
		r.Gauge("tokens", "tokens", b.TokensAt(b.Now()))
	}, g, 0))
}
