package shed

import (
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/contract"
)

// Policy holds the constants of adaptive load shedding. The presets are the constants of go-zero's
// core/load/adaptiveshedder.go (v1.10.3), named in each field. Build one from [DefaultPolicy] and
// change fields; [NewCore] and [New] validate it.
type Policy struct {
	// Buckets is how many buckets the window of passes and response times has: 50 (go-zero
	// adaptiveshedder.go defaultBuckets). In [1, atomicwindow.MaxBuckets]: every read visits
	// every bucket, so more would cost memory and time for no resolution anyone needs.
	Buckets int
	// Window is the time the buckets cover together: 5 s (go-zero defaultWindow). Window /
	// Buckets must be at least 1 ns.
	Window time.Duration
	// CPU is the threshold, in thousandths of the CPU the process may use, at or over which the
	// server is hot: 900 (go-zero defaultCpuThreshold). In [1, 999].
	CPU int
	// Latency is the response time assumed while the window has none: 1 s (go-zero defaultMinRt),
	// large so that an idle server refuses nothing.
	Latency time.Duration
	// Beta weighs the moving average of calls in flight, updated as each call settles: 0.9
	// (go-zero flyingBeta). In [0, 1).
	Beta float64
	// Cool is how long a server stays hot after the CPU was last over the threshold, if it has
	// refused since: 1 s (go-zero coolOffDuration).
	Cool time.Duration
	// MinShare is the least share of its capacity a server keeps admitting however hot the CPU
	// is: 0.1 (go-zero overloadFactorLowerBound). In (0, 1].
	MinShare float64
	// Memory is how long the server remembers its busiest bucket and its fastest bucket mean
	// response time: 1 min (ward's own; go-zero has none, which is Memory 0). Capacity is the
	// busiest bucket's passes times the fastest bucket's mean response time. Under sustained
	// overload every response time includes the time the call queued, so without a memory the
	// capacity follows the queue upward, window after window, and the shedder stops protecting
	// (a 20-worker server offered 4× its throughput for 90 s, the CPU check bypassed, showed 34 to
	// 48 times its capacity and answered half its calls after more than 1 s: sim.ShedRunaway).
	// With it, both readings are taken over the window and the last one to two Memory spans, so a
	// queue cannot inflate the capacity (the same run holds it at 1.25× the pool, p99 two service
	// times). The price: a server that really got slower while hot is refused what its old speed
	// could not carry until the memory forgets, within 2 × Memory. Must be >= 0; 0 turns the
	// memory off.
	Memory time.Duration
}

// DefaultPolicy returns the preset: 50 buckets over 5 s, CPU threshold 900 thousandths, 1 s
// assumed response time, in-flight average weighted 0.9, 1 s to cool, never under 0.1 of
// capacity — the constants of go-zero's core/load/adaptiveshedder.go (v1.10.3) — and the fastest
// response time remembered for 1 min (ward's own: see Policy.Memory).
func DefaultPolicy() Policy {
	return Policy{Buckets: 50, Window: 5 * time.Second, CPU: 900, Latency: time.Second, Beta: 0.9, Cool: time.Second, MinShare: 0.1, Memory: time.Minute}
}

// ErrInvalid is matched, with errors.Is, by every configuration error of this package (and by
// ward.ErrInvalid); the message names the field.
var ErrInvalid = contract.Invalid("shed: invalid configuration")

// Validate reports the first field of p that is out of range, by name.
func (p Policy) Validate() error {
	switch {
	case p.Buckets < 1 || p.Buckets > atomicwindow.MaxBuckets:
		return contract.Field(ErrInvalid, "Policy.Buckets", p.Buckets, fmt.Sprintf("in [1, %d] (atomicwindow.MaxBuckets)", atomicwindow.MaxBuckets))
	case p.Window < time.Duration(p.Buckets):
		return contract.Field(ErrInvalid, "Policy.Window", p.Window, fmt.Sprintf(">= 1ns per bucket (%d ns)", p.Buckets))
	case p.CPU < 1 || p.CPU > 999:
		return contract.Field(ErrInvalid, "Policy.CPU", p.CPU, "in [1, 999] thousandths")
	case p.Latency <= 0:
		return contract.Field(ErrInvalid, "Policy.Latency", p.Latency, "> 0")
	case !(p.Beta >= 0 && p.Beta < 1):
		return contract.Field(ErrInvalid, "Policy.Beta", p.Beta, "in [0, 1)")
	case p.Cool < 0:
		return contract.Field(ErrInvalid, "Policy.Cool", p.Cool, ">= 0")
	case !(p.MinShare > 0 && p.MinShare <= 1):
		return contract.Field(ErrInvalid, "Policy.MinShare", p.MinShare, "in (0, 1]")
	case p.Memory < 0:
		return contract.Field(ErrInvalid, "Policy.Memory", p.Memory, ">= 0 (0 turns the memory off)")
	}
	return nil
}

// Window fields: passes, the sum of the timed passes' response times (ns), how many were timed.
const (
	fPasses = iota
	fRTSum
	fRTCount
	fields
)

// shape is what capacity reads from a window: the busiest bucket's passes and the fastest bucket's
// mean response time (ns; +Inf when no bucket timed a call). The current, partial bucket is left
// out: fold with Each(now, false, ...).
type shape struct {
	maxPass int64
	minRT   float64
}

func newShape() shape { return shape{maxPass: 1, minRT: math.Inf(1)} }

func (s *shape) add(b atomicwindow.Bucket) {
	s.maxPass = max(s.maxPass, b[fPasses])
	if b[fRTCount] > 0 {
		s.minRT = min(s.minRT, float64(b[fRTSum])/float64(b[fRTCount]))
	}
}

// capacity is the most calls in flight the window's shape shows the server can carry: the busiest
// bucket's passes (at least 1) times the fastest bucket's mean response time over the bucket width
// (passes per millisecond × milliseconds), at least 1; Latency stands for the response time while
// no bucket timed a call. Both are taken over the window and the remembered shape (Memory) together.
func (p *Policy) capacity(sh, mem shape) float64 {
	rt := min(sh.minRT, mem.minRT)
	if math.IsInf(rt, 1) {
		rt = float64(p.Latency)
	}
	width := float64(int64(p.Window) / int64(p.Buckets))
	return max(float64(max(sh.maxPass, mem.maxPass))*rt/width, 1)
}

// memory remembers the window's shape over the last one to two Memory spans: the busiest and
// fastest buckets seen since the span began (cur) and over the span before (prev). Passes and
// response time are remembered together, so that the capacity is the busiest throughput the
// server showed times its fastest response time, and neither a queue (which inflates response
// times) nor a stretch of refusals (which deflates throughput) moves it.
type memory struct {
	cur, prev shape
	since     int64 // when the current span began
}

func newMemory(now int64) memory { return memory{cur: newShape(), prev: newShape(), since: now} }

// value is the remembered shape (newShape's when there is none, or Memory is 0).
func (m *memory) value() shape {
	return shape{maxPass: max(m.cur.maxPass, m.prev.maxPass), minRT: min(m.cur.minRT, m.prev.minRT)}
}

// fold takes the window's shape at now: a span older than Memory moves to prev (two spans old,
// it is forgotten), and sh joins the current one. A clock that jumps back restarts the span at
// now. With Memory 0 it keeps nothing.
func (p *Policy) fold(m *memory, now int64, sh shape) {
	if p.Memory == 0 {
		return
	}
	if now < m.since {
		m.since = now
	}
	if span := uint64(now) - uint64(m.since); span >= uint64(p.Memory) {
		if span >= 2*uint64(p.Memory) {
			m.cur = newShape()
		}
		m.prev, m.cur, m.since = m.cur, newShape(), now
	}
	m.cur = shape{maxPass: max(m.cur.maxPass, sh.maxPass), minRT: min(m.cur.minRT, sh.minRT)}
}

// factor scales capacity down as the CPU nears 1000 thousandths, never under MinShare. It is taken
// in float64 so that no reading, however far outside [0, 1000], can overflow: a reading at or over
// 1000 gives MinShare, one at or under the threshold gives 1.
func (p *Policy) factor(cpu int) float64 {
	// The ends first, in integers: a saturated CPU (1000 or over) gives MinShare and a reading at
	// or under the threshold 1, as the quotient would, without its arithmetic. Between them the
	// quotient lies in (0, 1), so only MinShare can hold it: max(f, MinShare), written as a
	// compare (f is never NaN, and MinShare > 0 leaves no signed zero to order, so the builtin's
	// NaN and zero handling would be instructions spent for nothing; the result is the same).
	if cpu >= 1000 {
		return p.MinShare
	}
	if cpu <= p.CPU {
		return 1
	}
	f := (1000 - float64(cpu)) / float64(1000-p.CPU)
	if f < p.MinShare {
		f = p.MinShare
	}
	return f
}

// never is the instant the CPU was last hot, for a server that has never been hot.
const never = math.MinInt64

// heat is the hot rule, the one Core, Shedder and Snapshot all apply: the server is hot at now if
// the CPU reading is at or over the threshold, or if it has refused since it was last found cool
// (dropped) and the CPU was hot less than Cool ago (hotAt; never if it never was). It returns
// whether the server is hot and the instant the CPU was last hot, as the caller should store it:
// now if the reading is hot, now again if hotAt lay after now (the clock jumped back: a far-future
// instant never keeps the server cooling for years), hotAt otherwise. A caller that finds the
// server not hot clears dropped.
func (p *Policy) heat(now int64, cpu int, hotAt int64, dropped bool) (bool, int64) {
	if cpu >= p.CPU {
		return true, now
	}
	if hotAt > now {
		hotAt = now
	}
	return dropped && hotAt != never && uint64(now)-uint64(hotAt) < uint64(p.Cool), hotAt
}

// full reports whether both the average and the current count of calls in flight exceed capacity
// scaled for the CPU.
func (p *Policy) full(capacity float64, cpu int, avg float64, inFlight int64) bool {
	limit := p.limit(capacity, cpu)
	return avg > limit && float64(inFlight) > limit
}

// limit is the capacity scaled for the CPU: what both the average and the count of calls in
// flight must exceed for the server to be full.
func (p *Policy) limit(capacity float64, cpu int) float64 { return capacity * p.factor(cpu) }

// Core is the pure adaptive shedder: deterministic, allocation-free after construction, not safe
// for concurrent use. The clock and the CPU reading are arguments: now in nanoseconds from any
// monotonic origin, cpu in thousandths of what the process may use. [Shedder] is its concurrent
// counterpart.
//
// A call is refused only when the server is both hot and full. Hot: cpu is at or over the
// threshold, or it was within Cool and the core has refused since. Full: both the moving average
// and the current count of calls in flight exceed the capacity the window shows, scaled down as
// the CPU nears 1000 but never under MinShare.
type Core struct {
	p        Policy
	win      *atomicwindow.Window[atomicwindow.Bucket]
	inFlight int64
	avg      float64
	mem      memory
	hotAt    int64 // the last instant the CPU was at or over the threshold; never if it was not
	dropped  bool  // refused since the server was last found cool
	refused  int64
}

// NewCore returns a shedder with an empty window opening at now.
func NewCore(p Policy, now int64) (*Core, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	win, err := atomicwindow.NewWindow[atomicwindow.Bucket](p.Buckets, p.Window, now)
	if err != nil {
		return nil, err
	}
	return &Core{p: p, win: win, hotAt: never, mem: newMemory(now)}, nil
}

// Ticket is a call a [Core] let through. Settle it once with Pass, Fail or Ignore, as a
// [Promise] is settled; the methods clear it, so settling the same variable again is a no-op. The
// zero Ticket is settled already.
type Ticket struct {
	c     *Core
	start int64
}

// Allow asks to start one call at now with the CPU at cpu thousandths. A reading below 0 scales
// capacity as 0 does (not at all) and one over 1000 as 1000 does (down to MinShare); any reading
// at or over the threshold is hot.
func (c *Core) Allow(now int64, cpu int) (Ticket, bool) {
	hot, at := c.p.heat(now, cpu, c.hotAt, c.dropped)
	c.hotAt = at
	if !hot {
		c.dropped = false
	} else if c.p.full(c.fold(now), cpu, c.avg, c.inFlight) {
		c.dropped = true
		c.refused++
		return Ticket{}, false
	}
	c.inFlight++
	return Ticket{c: c, start: now}, true
}

// Capacity returns how many calls in flight the window at now shows the server can carry, before
// the CPU scaling.
func (c *Core) Capacity(now int64) float64 {
	return c.p.capacity(c.shape(now), c.mem.value())
}

func (c *Core) shape(now int64) shape {
	sh := newShape()
	c.win.Each(now, false, func(b atomicwindow.Bucket) { sh.add(b) })
	return sh
}

// fold returns the capacity at now and folds the window's shape into the memory.
func (c *Core) fold(now int64) float64 {
	sh := c.shape(now)
	cap := c.p.capacity(sh, c.mem.value())
	c.p.fold(&c.mem, now, sh)
	return cap
}

// leave takes a call out of flight and moves the average of calls in flight.
func (c *Core) leave() {
	c.inFlight--
	c.avg = c.avg*c.p.Beta + float64(c.inFlight)*(1-c.p.Beta)
}

// Pass settles a call that succeeded at now: it leaves flight, moves the average of calls in
// flight, and its response time counts toward what the server has shown it can do. A now before
// the call started counts as a response time of 0.
func (t *Ticket) Pass(now int64) {
	c := t.c
	if c == nil {
		return
	}
	t.c = nil
	c.leave()
	b := c.win.Slot(now)
	b[fPasses]++
	b[fRTSum] += max(now-t.start, 0)
	b[fRTCount]++
}

// Fail settles a call that failed or overloaded: it leaves flight and moves the average of calls
// in flight, and says nothing about capacity.
func (t *Ticket) Fail() {
	if c := t.c; c != nil {
		t.c = nil
		c.leave()
	}
}

// Ignore settles a call neutrally (the caller gave up, or the error was the caller's own): it
// leaves flight and records nothing, neither a response time nor a move of the average.
func (t *Ticket) Ignore() {
	if c := t.c; c != nil {
		t.c = nil
		c.inFlight--
	}
}

// InFlight returns how many calls are in flight.
func (c *Core) InFlight() int64 { return c.inFlight }

// Average returns the moving average of calls in flight.
func (c *Core) Average() float64 { return c.avg }

// Refused returns how many calls the core has refused.
func (c *Core) Refused() int64 { return c.refused }
