package rate

import (
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// Quota is where a period counter stands after one event: [Period.TakeQuota],
// [PeriodLimiter.TakeQuota].
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
// midnight UTC rather than a day after first use. Refused events are not counted. An instant
// before the open period's start counts in it; one more than [MaxSkew] before it is read as the
// clock having jumped back: the period is pulled back to open at that instant, spent.
//
// Period is the pure arithmetic, not safe for concurrent use; [Period.Step] is the seam for a
// shared store, and [PeriodLimiter] the lock-free concurrent counter.
type Period struct {
	quota  int
	period int64
	align  bool
	usage  Usage
}

// NewPeriod returns a counter no event has touched. quota and period must be positive: anything
// else is an error naming the field.
func NewPeriod(quota int, period time.Duration, align bool) (*Period, error) {
	if quota < 1 {
		return nil, contract.Field(ErrInvalid, "quota", quota, ">= 1")
	}
	if period <= 0 {
		return nil, contract.Field(ErrInvalid, "period", period, "> 0")
	}
	return &Period{quota: quota, period: int64(period), align: align}, nil
}

// Quota returns the events admitted per period.
func (p *Period) Quota() int { return p.quota }

// Opening returns the state of a counter nobody has touched.
func (p *Period) Opening(int64) Usage { return Usage{} }

// current returns u as it stands at now: a closed period reads as none open. A now before the
// open period's start (the clock went backwards) counts in the open period, unless it is more than
// [MaxSkew] before it: then the period is pulled back to open at now, spent.
func (p *Period) current(now int64, u Usage) Usage {
	switch {
	case !u.Open:
	case skewed(u.Start, now):
		return p.spent(now)
	case p.ended(u.Start, now):
		return Usage{}
	}
	return u
}

// spent returns a period opened at now with its quota spent: what a period pulled back is.
func (p *Period) spent(now int64) Usage { return Usage{Start: p.open(now), Count: p.quota, Open: true} }

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

// Step answers n events at now against state u (a negative n costs nothing) and returns whether
// they were granted, the state to write back and, when refused, how long until they would be: the
// end of the period, or [Forever] for more than the quota. It is the seam for a caller sharing the
// counter through a compare-and-set store. A corrupt state (a negative count) is read as an empty
// period; a count over the quota reads as spent.
func (p *Period) Step(now int64, u Usage, n int) Grant[Usage] {
	u, ok := p.step(now, u, n)
	if ok {
		return Grant[Usage]{Granted: true, State: u}
	}
	return Grant[Usage]{State: u, Wait: p.next(now, u, n)}
}

// step is Step without the wait, which only a refusal needs.
func (p *Period) step(now int64, u Usage, n int) (Usage, bool) {
	n = cost(n)
	u.Count = max(u.Count, 0) // a state from a store is held to a count that can exist
	u = p.current(now, u)
	switch {
	case n > p.quota:
		return u, false
	case n == 0:
		return u, true
	case !u.Open:
		u = Usage{Start: p.open(now), Open: true}
	}
	if u.Count > p.quota-n {
		return u, false
	}
	u.Count += n
	return u, true
}

// TakeAt counts n events at now if the quota has room for them all (a negative n costs nothing).
// If not, wait is how long until it would: the end of the period, [Forever] for more than the
// quota. Refused events are not counted.
func (p *Period) TakeAt(now int64, n int) (ok bool, wait time.Duration) {
	u, ok := p.step(now, p.usage, n)
	p.usage = u
	if ok {
		return true, 0
	}
	return false, p.next(now, u, n)
}

// TakeQuota counts one event at now and says where the quota stands: [Under], [Hit] (the last
// event of the period) or [Over] (refused, not counted).
func (p *Period) TakeQuota(now int64) Quota {
	u, ok := p.step(now, p.usage, 1)
	p.usage = u
	return p.quotaOf(ok, u.Count)
}

// quotaOf says where a count stands after an event.
func (p *Period) quotaOf(granted bool, count int) Quota {
	switch {
	case !granted:
		return Over
	case count == p.quota:
		return Hit
	}
	return Under
}

// Left returns how many events remain in the current period at now.
func (p *Period) Left(now int64) int { return p.left(p.current(now, p.usage)) }

func (p *Period) left(u Usage) int { return max(p.quota-u.Count, 0) }

// Next returns how long until n events at now would be admitted, without counting them: 0 when
// they would be, the end of the period when it is spent, [Forever] for more than the quota.
func (p *Period) Next(now int64, n int) time.Duration { return p.next(now, p.current(now, p.usage), n) }

func (p *Period) next(now int64, u Usage, n int) time.Duration {
	switch n = cost(n); {
	case n > p.quota:
		return Forever
	case p.left(u) >= n:
		return 0
	}
	return p.reset(now, u)
}

// Reset returns how long until the current period ends and the count starts again: 0 when no
// period is open, because the next event would open one. Never negative, never more than the
// period. It is what an X-RateLimit-Reset header is computed from.
func (p *Period) Reset(now int64) time.Duration { return p.reset(now, p.current(now, p.usage)) }

// reset returns how long from now until the open period of u (current at now) ends.
func (p *Period) reset(now int64, u Usage) time.Duration {
	switch {
	case !u.Open:
		return 0
	case now < u.Start:
		return time.Duration(p.period)
	}
	return time.Duration(p.period - int64(since(now, u.Start))) // under the period: it is open
}

// Acquire counts an event at now: the [Permit] method.
func (p *Period) Acquire(now int64) bool {
	ok, _ := p.TakeAt(now, 1)
	return ok
}

// Release takes back one event of the open period, if it is still open (a period that would be
// pulled back at now is left as it is).
func (p *Period) Release(now int64) {
	if p.usage.Open && skewed(p.usage.Start, now) {
		return
	}
	if u := p.current(now, p.usage); u.Open && u.Count > 0 {
		u.Count--
		p.usage = u
	}
}
