package pool

import "time"

// Ward stands in front of the backend a pool connects to. Every part is optional, and the zero
// Ward is empty: a pool with an empty ward decides exactly as a pool without one. The parts are
// small interfaces so that any implementation fits; [FromBreaker], [FromBucket], [FromBackoff]
// and [FromShedder] make them from ward's own packages.
//
// A Ward's parts are pure: they are given the instants and draws, and are called by one goroutine
// at a time ([Core] is single-threaded; [Pool] calls them under its lock, on the paths that
// make a resource, and on every lend when the ward has a shedder).
type Ward struct {
	// Breaker refuses new connections to a failing backend at the rate it deserves: Take answers
	// Shed instead of Make. A make that worked counts as a success, one that failed as a failure.
	Breaker Breaker
	// Bucket spaces makes out: Take answers Later instead of Make until a token is there.
	Bucket Bucket
	// Backoff holds making back after a make failed: Take answers Later until the delay after
	// the latest failure has passed.
	Backoff Backoff
	// Shedder stops lending while the process is hot: Take answers Shed instead of Ready or Make.
	Shedder Shedder
}

// Breaker is the part of a [Ward] that refuses new connections to a failing backend.
type Breaker interface {
	// Allow reports whether a new connection may be tried at now; roll is a draw in [0, 1).
	Allow(now int64, roll float64) bool
	// Record counts how a connection allowed earlier turned out: ok is a success.
	Record(now int64, ok bool)
	// Ratio returns the share of new connections refused at now, in [0, 1].
	Ratio(now int64) float64
}

// Bucket is the part of a [Ward] that spaces makes out.
type Bucket interface {
	// Wait returns how long until one make may start at now: 0 when it may now.
	Wait(now int64) time.Duration
	// Take spends one make at now; it is called only after Wait answered 0 at the same now.
	Take(now int64)
}

// Backoff is the part of a [Ward] that holds making back after a failed make.
type Backoff interface {
	// Delay returns how long to hold making back after the failures-th failed make in a row (the
	// first is 1); roll is a draw in [0, 1) for the jitter and previous is the delay held back
	// after the failure before (0 for the first).
	Delay(failures int, roll float64, previous time.Duration) time.Duration
}

// Shedder is the part of a [Ward] that stops lending while the process is hot.
type Shedder interface {
	// Lend asks to lend one resource at now, and returns the loan to settle with Return.
	Lend(now int64) (loan int, ok bool)
	// Return settles a loan at now: ok when the resource came back whole, false when it broke
	// (or was never made).
	Return(loan int, now int64, ok bool)
}

// guard is the state a ward's decisions need beyond its parts: the backoff after failed makes.
type guard struct {
	w        Ward
	failures int           // failed makes in a row
	until    int64         // no make before this instant, after a failure
	held     bool          // until is set
	previous time.Duration // the last backoff delay
}

// lend asks the shedder to lend at now.
func (g *guard) lend(now int64) (int, bool) {
	if g.w.Shedder == nil {
		return 0, true
	}
	return g.w.Shedder.Lend(now)
}

// back settles a loan.
func (g *guard) back(loan int, now int64, ok bool) {
	if g.w.Shedder != nil {
		g.w.Shedder.Return(loan, now, ok)
	}
}

// admit decides a make at now, with room for it: Make (and the loan it lends), Later with the
// wait, or Shed. The checks that change no state come first, so a refusal leaves no trace in a
// part that did not refuse: the backoff, the bucket's wait, then the shedder, then the breaker
// (whose every admission is followed by a Record), and the bucket's token is spent last.
func (g *guard) admit(now int64, roll float64) (Kind, time.Duration, int) {
	var wait time.Duration
	if g.held && now < g.until {
		wait = time.Duration(uint64(g.until) - uint64(now))
	}
	if g.w.Bucket != nil {
		wait = max(wait, g.w.Bucket.Wait(now))
	}
	if wait > 0 {
		return Later, wait, 0
	}
	loan, ok := g.lend(now)
	if !ok {
		return Shed, 0, 0
	}
	if g.w.Breaker != nil && !g.w.Breaker.Allow(now, roll) {
		g.back(loan, now, false)
		return Shed, 0, 0
	}
	if g.w.Bucket != nil {
		g.w.Bucket.Take(now)
	}
	return Make, 0, loan
}

// made counts a make that worked.
func (g *guard) made(now int64) {
	g.failures, g.held, g.previous = 0, false, 0
	if g.w.Breaker != nil {
		g.w.Breaker.Record(now, true)
	}
}

// unmade counts a make that failed and starts the backoff's delay.
func (g *guard) unmade(now int64, roll float64) {
	if g.w.Breaker != nil {
		g.w.Breaker.Record(now, false)
	}
	if g.w.Backoff == nil {
		return
	}
	if g.failures < maxInt {
		g.failures++
	}
	d := max(g.w.Backoff.Delay(g.failures, roll, g.previous), 0)
	g.previous = d
	g.held = true
	g.until = now + int64(min(d, time.Duration(maxInt64-max(now, 0))))
}

// refusal is the breaker's refusal ratio at now.
func (g *guard) refusal(now int64) float64 {
	if g.w.Breaker == nil {
		return 0
	}
	return g.w.Breaker.Ratio(now)
}

const (
	maxInt   = int(^uint(0) >> 1)
	maxInt64 = 1<<63 - 1
)
