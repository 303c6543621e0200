package pool

import (
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// ErrInvalid is matched, with errors.Is, by every configuration error of this package (and so is
// ward.ErrInvalid); the message names the field.
var ErrInvalid = contract.Invalid("pool: invalid configuration")

// MaxSize is the largest Limits.Size: a pool's resources are numbered in 32 bits.
const MaxSize = math.MaxInt32

// Limits are the limits a pool holds itself to. Build them from [DefaultLimits] and change
// fields; [NewCore] and [New] validate them.
type Limits struct {
	// Size is how many resources may be live at once: idle, lent, and being made. 10. In [1,
	// MaxSize].
	Size int
	// Idle is how many may sit idle; a resource given back when that many already sit idle is not
	// kept but closed. 10. In [0, Size]: 0 keeps none. A value below Size costs connections: each
	// time more than Idle come back at once, the ones over are closed, and the next time more than
	// Idle are in use at once they are opened again, a dial each (in a simulated server with Size
	// 8, Idle 4 opened a connection six times as often as Idle 8). To shrink a pool after a burst,
	// keep Idle at Size and set Keep.
	Idle int
	// Keep is how long an idle resource may sit before it is retired: 30 minutes. Zero means no
	// limit; negative is an error.
	Keep time.Duration
	// Life is how long a resource may live at all, however busy it has been: forever (0, no
	// limit); negative is an error.
	Life time.Duration
}

// DefaultLimits returns the preset: ten live at once, ten of them allowed to sit idle, retired
// after thirty minutes idle and never by age. Ten live is what most services settle on, thirty
// minutes is long enough that a warm pool survives a quiet spell, and keeping Idle equal to Size
// means a pool that grew under load does not throw away what it just made.
func DefaultLimits() Limits {
	return Limits{Size: 10, Idle: 10, Keep: 30 * time.Minute}
}

// Validate reports the first field out of range, by name.
func (l Limits) Validate() error {
	switch {
	case l.Size < 1 || l.Size > MaxSize:
		return contract.Field(ErrInvalid, "Limits.Size", l.Size, "in [1, MaxSize]")
	case l.Idle < 0 || l.Idle > l.Size:
		return contract.Field(ErrInvalid, "Limits.Idle", l.Idle, "in [0, Size]")
	case l.Keep < 0:
		return contract.Field(ErrInvalid, "Limits.Keep", l.Keep, ">= 0 (0: no limit)")
	case l.Life < 0:
		return contract.Field(ErrInvalid, "Limits.Life", l.Life, ">= 0 (0: no limit)")
	}
	return nil
}

// past reports whether more than limit has passed from since to now; a zero limit is none, and a
// now before since (a clock gone backwards) is no time at all.
func past(now, since int64, limit time.Duration) bool {
	return limit > 0 && now > since && uint64(now)-uint64(since) > uint64(limit)
}

// stale reports whether a resource born at born and idle since rested is past its age at now.
func (l *Limits) stale(now, born, rested int64) bool {
	return past(now, rested, l.Keep) || past(now, born, l.Life)
}

// Kind is which of the six answers [Core.Take] gave.
type Kind uint8

const (
	// Ready is an idle resource, the most recently given back: use it, then give it back.
	Ready Kind = iota
	// Stale is an idle resource past Keep or Life, already out of the pool and out of its count:
	// close it, then take again.
	Stale
	// Make is room for one more, reserved: open one, then call Made, or Unmade if that failed.
	Make
	// Wait is every live slot in use: queue the caller; the core has no queue of its own.
	Wait
	// Later is making held back by the ward's bucket or backoff, for Taken.Wait: try again then.
	Later
	// Shed is a refusal: the ward's breaker refuses a new connection, or its shedder refuses to
	// lend. Fail fast.
	Shed
)

var kindNames = [...]string{"Ready", "Stale", "Make", "Wait", "Later", "Shed"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Taken is what [Core.Take] answers: the kind, the resource for Ready and Stale, and the wait for
// Later.
type Taken[T any] struct {
	Kind Kind
	Item T             // Ready and Stale
	Wait time.Duration // Later: how long making is held back; > 0
}

// resource is what the core knows of a live resource it made, by identity.
type resource struct {
	born int64
	loan int  // the ward's shedder loan while lent
	idle bool // sitting idle (else lent)
}

type idleEntry[T any] struct {
	item   T
	rested int64
}

// Core is the bookkeeping of holding a limited number of costly resources (connections, mostly)
// with a [Ward] in front of the backend they come from. It does not open, close or wait: a
// caller with a runtime does all three, and [Pool] is that caller. What it knows is how many are
// live, which are idle, which are lent and when each was made, and which have sat or lived long
// enough to be let go.
//
// Time is passed in as nanoseconds of any monotonic clock; only differences are read, so a test
// drives a pool through an hour in three lines. A lent resource is recognised on its way back by
// identity (T is comparable: a connection handle is a pointer), which is how its birth survives
// the loan.
//
// A Core is not safe for concurrent use. Its methods allocate nothing once its tables have grown
// to the pool's size, except Evict and Close, which return a new slice when they have something
// to hand back.
type Core[T comparable] struct {
	lim  Limits
	g    guard
	res  map[T]resource
	idle []idleEntry[T] // the top of the stack last
	// making holds the shedder loan of each reservation Make handed out and Made, Unmade or an
	// unknown Give has not settled yet.
	making []int
	lent   int
	closed bool
}

// NewCore returns a core holding limits, with ward in front (the zero Ward is empty), started at
// now.
func NewCore[T comparable](limits Limits, ward Ward, now int64) (*Core[T], error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	_ = now // every decision reads only differences of the instants it is given
	return &Core[T]{lim: limits, g: guard{w: ward}, res: make(map[T]resource, min(limits.Size, 1024))}, nil
}

// Limits returns the limits the core holds itself to.
func (c *Core[T]) Limits() Limits { return c.lim }

// Take answers a caller that wants a resource at now; roll is a draw in [0, 1) the ward's
// breaker uses (outside it, NaN included, it is held into it).
//
// The most recently given back resource is handed out first: a warm connection is likelier to
// still be good than a cold one, and handing out the newest lets the oldest age past Keep and be
// evicted, which is how a pool shrinks after a burst. If that resource is past Keep or Life it
// comes back as Stale instead, already out of the pool: a pool that discarded it silently would
// leak whatever it holds whenever the eviction timer had not run first. With nothing idle, Take
// reserves room for a new one (Make) if there is room and the ward agrees, and answers Wait when
// every live slot is in use.
func (c *Core[T]) Take(now int64, roll float64) Taken[T] {
	if c.closed {
		return Taken[T]{Kind: Shed}
	}
	if n := len(c.idle); n > 0 {
		top := c.idle[n-1]
		r := c.res[top.item]
		if c.lim.stale(now, r.born, top.rested) {
			c.popIdle()
			delete(c.res, top.item)
			return Taken[T]{Kind: Stale, Item: top.item}
		}
		loan, ok := c.g.lend(now)
		if !ok {
			return Taken[T]{Kind: Shed}
		}
		c.popIdle()
		c.res[top.item] = resource{born: r.born, loan: loan}
		c.lent++
		return Taken[T]{Kind: Ready, Item: top.item}
	}
	if c.Live() >= c.lim.Size {
		return Taken[T]{Kind: Wait}
	}
	kind, wait, loan := c.g.admit(now, roll)
	if kind == Make {
		c.making = append(c.making, loan)
	}
	return Taken[T]{Kind: kind, Wait: wait}
}

func (c *Core[T]) popIdle() {
	n := len(c.idle) - 1
	var zero idleEntry[T]
	c.idle[n] = zero
	c.idle = c.idle[:n]
}

// reservation settles one outstanding Make, returning its loan; false when there is none.
func (c *Core[T]) reservation() (int, bool) {
	n := len(c.making) - 1
	if n < 0 {
		return 0, false
	}
	loan := c.making[n]
	c.making = c.making[:n]
	return loan, true
}

// Made registers item, made after Take said Make, as lent and born now: the breaker counts a
// success and the backoff resets. It reports whether the core took it: false when no Make is
// outstanding, the core already knows item, or the core is closed; the caller then closes it
// (unless it is one the core already holds).
func (c *Core[T]) Made(item T, now int64) bool {
	if _, known := c.res[item]; known || len(c.making) == 0 {
		return false
	}
	loan, _ := c.reservation()
	c.g.made(now)
	if c.closed {
		c.g.back(loan, now, true)
		return false
	}
	c.res[item] = resource{born: now, loan: loan}
	c.lent++
	return true
}

// Unmade gives back a reservation that did not become a resource: the attempt to make it failed.
// The breaker counts a failure, and with a backoff in the ward no Make is handed out again until
// its delay has passed; roll draws the jitter. Without an outstanding Make it does nothing.
func (c *Core[T]) Unmade(now int64, roll float64) {
	loan, ok := c.reservation()
	if !ok {
		return
	}
	c.g.unmade(now, roll)
	c.g.back(loan, now, false)
}

// Give hands item back at now, keeping the birth it was lent with. It reports whether the core
// kept it; false means close it: that many already sit idle, it is past Life, or the core is
// closed. A broken resource goes to [Core.Drop] instead.
//
// An item the core does not know is one made after a Make without Made being called: it fills
// that reservation and is taken as born now (false, and nothing changes, when no Make is
// outstanding). An item already idle is kept as it is (true).
func (c *Core[T]) Give(item T, now int64) bool {
	r, known := c.res[item]
	switch {
	case known && r.idle:
		return true
	case known:
		c.lent--
		c.g.back(r.loan, now, true)
	default:
		if !c.Made(item, now) {
			return false
		}
		r = c.res[item]
		c.lent--
		c.g.back(r.loan, now, true)
	}
	if c.closed || len(c.idle) >= c.lim.Idle || past(now, r.born, c.lim.Life) {
		delete(c.res, item)
		return false
	}
	c.res[item] = resource{born: r.born, idle: true}
	c.idle = append(c.idle, idleEntry[T]{item: item, rested: now})
	return true
}

// Drop says a lent resource is not coming back because it broke: it leaves the count, which is
// what keeps the live count honest (without it a failed connection would hold a slot for ever).
// The shedder's loan settles as a failure. An item that is not lent is ignored.
func (c *Core[T]) Drop(item T, now int64) {
	r, known := c.res[item]
	if !known || r.idle {
		return
	}
	delete(c.res, item)
	c.lent--
	c.g.back(r.loan, now, false)
}

// Evict removes every idle resource that has sat longer than Keep or lived longer than Life at
// now and hands them back for the caller to close, oldest given back first; nil when there are
// none. Take hands a stale one back too, so a resource is never lost for want of this having run.
func (c *Core[T]) Evict(now int64) []T {
	var out []T
	kept := c.idle[:0]
	for _, e := range c.idle {
		if c.lim.stale(now, c.res[e.item].born, e.rested) {
			out = append(out, e.item)
			delete(c.res, e.item)
			continue
		}
		kept = append(kept, e)
	}
	clear(c.idle[len(kept):])
	c.idle = kept
	return out
}

// Close empties out everything idle for the caller to close, oldest given back first, and closes
// the core: Take answers Shed from now on, and Give and Made answer false, so each lent resource
// is closed as it comes back. Closing again returns nil.
func (c *Core[T]) Close() []T {
	c.closed = true
	var out []T
	for _, e := range c.idle {
		out = append(out, e.item)
		delete(c.res, e.item)
	}
	clear(c.idle)
	c.idle = c.idle[:0]
	return out
}

// Live returns how many resources exist: idle, lent, and being made.
func (c *Core[T]) Live() int { return len(c.idle) + c.lent + len(c.making) }

// Idle returns how many sit idle.
func (c *Core[T]) Idle() int { return len(c.idle) }

// Busy returns how many are in use: lent, or being made.
func (c *Core[T]) Busy() int { return c.lent + len(c.making) }

// Refusal returns the share of new connections the ward's breaker refuses at now; 0 without a
// breaker.
func (c *Core[T]) Refusal(now int64) float64 { return c.g.refusal(now) }

// Pick chooses which of several pools to one service to take from: two are drawn by first and
// second (each in [0, 1); outside it they are held into it), and of those the one whose breaker
// refuses less wins, then the one with fewer in use, then the first drawn. refusal[i] and busy[i]
// describe pool i (its Refusal and Busy); pools past the shorter slice are not considered. -1 when
// there are none.
//
// Two random choices spread load almost as evenly as scanning every pool, and cost two draws
// instead of a walk over all of them.
func Pick(refusal []float64, busy []int, first, second float64) int {
	n := min(len(refusal), len(busy))
	if n == 0 {
		return -1
	}
	i := min(int(draw.Clean(first)*float64(n)), n-1)
	if n == 1 {
		return i
	}
	j := min(int(draw.Clean(second)*float64(n-1)), n-2)
	if j >= i {
		j++ // two different pools
	}
	ri, rj := refusal[i], refusal[j]
	switch {
	case rj < ri || (ri != ri && rj == rj): // a NaN refusal loses to any number
		return j
	case rj == ri && busy[j] < busy[i]:
		return j
	}
	return i
}
