package rate

import (
	"math"
	"time"
)

// Quota is where a [Period] stands after an event.
type Quota uint8

const (
	// Under: admitted, with room left.
	Under Quota = iota
	// Hit: admitted, and the quota is now spent; the next event this period will be refused.
	// Told apart because it is when a caller would warn. These are go-zero's Allowed, HitQuota and
	// OverQuota.
	Hit
	// Over: refused.
	Over
)

func (q Quota) String() string {
	switch q {
	case Under:
		return "Under"
	case Hit:
		return "Hit"
	}
	return "Over"
}

// Usage is a period's state apart from its policy: when the open period started and how many
// events it has admitted. Open is false before the first event. It is what a shared store keeps.
type Usage struct {
	Start int64
	Count int
	Open  bool
}

// Period is a fixed-window counter: at most quota events per period, the count starting again
// when a period ends. Cheaper than [Sliding] and coarser: a client can spend one quota at the end of
// a period and another at the start of the next. That is the trade go-zero's PeriodLimit makes.
//
// A period opens on the first event after the last one closed. With align it opens on a multiple
// of the period on the caller's clock instead, so with a Unix clock a daily quota resets at
// midnight UTC rather than a day after first use. Refused events are not counted.
//
// Period is the pure arithmetic, not safe for concurrent use; [Period.Step] is the seam for a
// shared store, and [PeriodLimiter] the lock-free concurrent counter.
type Period struct {
	quota  int
	period int64
	align  bool
	usage  Usage
}

// NewPeriod returns a counter no event has touched. quota must be positive; a period shorter
// than a nanosecond is raised to one.
func NewPeriod(quota int, period time.Duration, align bool) (*Period, error) {
	if quota < 1 {
		return nil, invalid("quota", quota, ">= 1")
	}
	return &Period{quota: quota, period: max(int64(period), 1), align: align}, nil
}

// Quota returns the events admitted per period.
func (p *Period) Quota() int { return p.quota }

// Opening returns the state of a counter nobody has touched.
func (p *Period) Opening(int64) Usage { return Usage{} }

// current returns u as it stands at now: a closed period reads as none open. A now before the
// open period's start (the clock went backwards) counts in the open period.
func (p *Period) current(u Usage, now int64) Usage {
	if u.Open && p.ended(u.Start, now) {
		return Usage{}
	}
	return u
}

// ended reports whether the period that started at start is over at now, exactly for any two
// instants: a now before the start (the clock went backwards) is inside it.
func (p *Period) ended(start, now int64) bool {
	return now >= start && since(now, start) >= uint64(p.period)
}

// open returns the start of a period opened at now: now, or with align the multiple of the period
// at or before now. One that would start before math.MinInt64 starts there, and so runs a little
// long rather than wrapping round.
func (p *Period) open(now int64) int64 {
	if !p.align {
		return now
	}
	r := now % p.period
	if r < 0 {
		r += p.period
	}
	if since(now, math.MinInt64) < uint64(r) {
		return math.MinInt64
	}
	return now - r
}

// Step answers one event at now against state u and returns where the quota stands and the state
// to write back; for a caller sharing the counter through a compare-and-set store. A corrupt
// state (a negative count) is read as an empty period; a count over the quota reads as spent.
func (p *Period) Step(u Usage, now int64) (Quota, Usage) {
	u.Count = max(u.Count, 0) // a state from a store is held to a count that can exist
	u = p.current(u, now)
	if !u.Open {
		u = Usage{Start: p.open(now), Open: true}
	}
	if u.Count >= p.quota {
		return Over, u
	}
	u.Count++
	if u.Count == p.quota {
		return Hit, u
	}
	return Under, u
}

// Take counts one event at now and says where the quota stands.
func (p *Period) Take(now int64) Quota {
	q, u := p.Step(p.usage, now)
	p.usage = u
	return q
}

// Left returns how many events remain in the current period at now.
func (p *Period) Left(now int64) int { return p.quota - p.current(p.usage, now).Count }

// Next returns how long until the current period ends: 0 when no period is open, because the
// next event would open one. Never negative, never more than the period.
func (p *Period) Next(now int64) time.Duration {
	u := p.current(p.usage, now)
	if !u.Open {
		return 0
	}
	if now < u.Start {
		return time.Duration(p.period)
	}
	return time.Duration(p.period - int64(since(now, u.Start))) // under the period: it is open

}

// Acquire counts an event at now: the [Permit] method; Hit is admitted.
func (p *Period) Acquire(now int64) bool { return p.Take(now) != Over }

// Release takes back one event of the open period, if it is still open.
func (p *Period) Release(now int64) {
	if u := p.current(p.usage, now); u.Open && u.Count > 0 {
		u.Count--
		p.usage = u
	}
}
