package live

import (
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

// Limiter shows an adaptive limiter: limit, in flight and latency (the last closed window's
// average response time, milliseconds) as gauges, refused as a counter.
func (p *Page) Limiter(name string, l *adaptive.Limiter) error {
	if l == nil {
		return nilArg("an *adaptive.Limiter")
	}
	return p.add(name, "adaptive limiter", func(r *Readings) {
		s := l.Snapshot()
		r.Gauge("limit", unitCalls, float64(s.Limit))
		r.Gauge("in flight", unitCalls, float64(s.InFlight))
		r.Gauge("latency", unitMS, float64(s.Latency.Nanoseconds())/1e6)
		r.Counter("refused", unitRate, float64(s.Refused))
	})
}

// Queue shows an adaptive queue's waiting line: the calls waiting for a slot. Show the queue's
// limiter with [Page.Limiter] beside it.
func (p *Page) Queue(name string, q *adaptive.Queue) error {
	if q == nil {
		return nilArg("an *adaptive.Queue")
	}
	return p.add(name, "adaptive queue", func(r *Readings) {
		r.Gauge("waiting", unitCalls, float64(q.Waiting()))
	})
}

// Partition shows one partition of an adaptive limit: its calls in flight and the calls it is
// guaranteed at the current limit.
func (p *Page) Partition(name string, part *adaptive.Partition) error {
	if part == nil {
		return nilArg("an *adaptive.Partition")
	}
	return p.add(name, "adaptive partition", func(r *Readings) {
		r.Gauge("in flight", unitCalls, float64(part.InFlight()))
		r.Gauge("guarantee", unitCalls, float64(part.Guarantee()))
	})
}

// Breaker shows a breaker: ratio (the share of calls it refuses now, 0 while healthy) and its
// window's successes, failures and drops as gauges, refused as a counter.
func (p *Page) Breaker(name string, b *breaker.Breaker) error {
	if b == nil {
		return nilArg("a *breaker.Breaker")
	}
	return p.add(name, "breaker", func(r *Readings) {
		s := b.Snapshot()
		r.Gauge("ratio", unitFraction, s.Ratio)
		r.Gauge("successes in window", unitCalls, float64(s.Successes))
		r.Gauge("failures in window", unitCalls, float64(s.Failures))
		r.Gauge("drops in window", unitCalls, float64(s.Drops))
		r.Counter("refused", unitRate, float64(s.Refused))
	})
}

// Shedder shows a shedder: CPU (percent; a gap while unknown), in flight, the moving average of
// in flight, capacity (the calls in flight the window shows the server carries) and hot (1 when
// a call now would find the server hot, else 0) as gauges, refused as a counter.
func (p *Page) Shedder(name string, s *shed.Shedder) error {
	if s == nil {
		return nilArg("a *shed.Shedder")
	}
	return p.add(name, "shedder", func(r *Readings) {
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
		r.Counter("refused", unitRate, float64(sn.Refused))
	})
}

// PoolStats is what [Page.Pool] reads: a *pool.Pool of any resource type.
type PoolStats interface {
	Stats() pool.Stats
}

// Pool shows a pool: lent (the resources in use), idle, live, making and waiting as gauges,
// opened, failed and closed as counters.
func (p *Page) Pool(name string, pl PoolStats) error {
	if isNil(pl) {
		return nilArg("a *pool.Pool")
	}
	return p.add(name, "pool", func(r *Readings) {
		s := pl.Stats()
		r.Gauge("lent", "resources", float64(s.Lent))
		r.Gauge("idle", "resources", float64(s.Idle))
		r.Gauge("live", "resources", float64(s.Live))
		r.Gauge("making", "resources", float64(s.Making))
		r.Gauge("waiting", unitCalls, float64(s.Waiting))
		r.Counter("opened", "opens/s", float64(s.Opened))
		r.Counter("failed", "opens/s", float64(s.Failed))
		r.Counter("closed", "closes/s", float64(s.Closed))
	})
}

// FailureWindow shows a failure window: keys and failures stored as gauges, evictions and
// uncounted failures as counters.
func (p *Page) FailureWindow(name string, w *failurewindow.Window) error {
	if w == nil {
		return nilArg("a *failurewindow.Window")
	}
	return p.add(name, "failure window", func(r *Readings) {
		s := w.Snapshot()
		r.Gauge("keys", "keys", float64(s.Keys))
		r.Gauge("stored", "failures", float64(s.Stored))
		r.Counter("evictions", "keys/s", float64(s.Evictions))
		r.Counter("uncounted", "failures/s", float64(s.Uncounted))
	})
}

// Bucket shows a token bucket's tokens, fractions included, at the limiter's own clock.
func (p *Page) Bucket(name string, b *rate.BucketLimiter) error {
	if b == nil {
		return nilArg("a *rate.BucketLimiter")
	}
	return p.add(name, "rate bucket", func(r *Readings) {
		r.Gauge("tokens", "tokens", b.TokensAt(b.Now()))
	})
}
