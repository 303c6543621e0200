package adaptive

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// credits holds a limit as credits: one per call that may still start. A credit is in exactly one
// place: the central pool, one P's pool, or a call in flight, so
//
//	central + Σ pools + in flight = limit
//
// at every instant no update is half done. An acquire takes a credit from its P's pool with a
// compare-and-set on that P's own cache line (no other core writes it, so the line does not move);
// a release adds one to the releasing P's pool the same way. Only an empty pool (take a batch from
// the central pool, or take one credit from another P's pool when the central one is empty) and an
// overfull one (give the excess back) touch the shared word. This is a distributed semaphore with
// exact accounting: a P's pool is a word written atomically, never a count that may lose updates,
// because a lowered limit takes credits out of other Ps' pools.
//
// A lowered limit subtracts the difference from the central pool, which may go negative (a debt),
// and sweeps every P's pool into it. While the central pool is in debt an acquire that finds its
// own pool empty is refused, and a release that finds a debt after adding its credit sweeps its
// own pool into the central one before it unpins, so that no call takes the credit from the pool
// first (a release learns of a debt from the gate, one word that also tells it when its pool
// filled from empty or overfilled, or a Queue waits on its credits). Where rows are picked at
// random rather than by the P, any caller may find a pool, so there an acquire takes no pooled
// credit while the central pool is in debt (takeOne). So every credit released after the sweep
// pays the debt and none stays parked or is taken: no more calls than the new limit are in
// flight once the calls admitted before the change have settled. A call
// that took its P's last pooled credit while the limit was being lowered is admitted under the
// limit it read, as a compare-and-set on one in-flight count is.
//
// A refusal must not scan every P's pool, so one word, dry, says when none can hold a credit. Its
// low bit is set by a scan that found every pool empty, with a compare-and-set from the value it
// read before it began; the rest is a version that a pool going from empty to holding credits
// raises (clearing the bit) after the pool's write, on that slow path only. While the central
// pool holds nothing and the bit is set, no credit has been parked since a scan found every pool
// empty, and an acquire whose own pool is empty is refused on two loads. A credit parked during a
// scan raises the version, so that scan's compare-and-set fails and the next refusal scans again.
//
// Credits moved between the central pool and a P's pool are in neither between the two writes.
// A refusal that read both while a move was under way could find no credit below the limit, so
// every such move is marked in one word (moves) before its first write and after its last, and a
// refusal, on loads or after a scan, stands only if that word read the same before and after its
// reads and showed no move under way; otherwise it looks again.
type credits struct {
	central atomic.Int64 // may be negative: the debt a lowered limit left
	batch   atomic.Int64 // credits an empty pool takes from the central pool at once; a pool keeps at most 2×batch
	dry     atomic.Int64 // bit 0: every pool was found empty; above it, a version raised by each pool that fills

	// moves marks credits moving between the central pool and a P's pool (a batch taken, an
	// excess or a debt's sweep given back), when they are in neither for a moment: its low 32
	// bits count the moves under way, its high 32 bits count the moves begun. A refusal that
	// found no credit trusts what it read only if moves read the same before and after, with no
	// move under way (see refusable and takeSlow).
	moves atomic.Uint64

	// gate is what a release compares its pool's count with (put): its low 32 bits are 2×batch−1
	// (clamped to 32 bits) while the central pool holds no debt and no Queue is attached, else 0,
	// which sends every release to gave; the high 32 bits are a version, raised by every change
	// (tune).
	gate atomic.Uint64

	// The *Queue whose waiters, and those of the Queues linked to it, every release wakes
	// (queue.go): written only when a Queue is made, read by every settle on this line, which give
	// reads already, so nil costs one load. An unsafe.Pointer, since an atomic.Pointer[Queue] here
	// makes the size in creditsPad depend on Queue, which holds a *Limiter: a cycle to the compiler.
	queues unsafe.Pointer
}

// creditsPad rounds credits to whole cache lines.
const creditsPad = (stripe.CacheLine - unsafe.Sizeof(credits{})%stripe.CacheLine) % stripe.CacheLine

// The words of a P's row in Limiter.pools. The pool is written atomically (another P may sweep
// it); the counts only by the goroutine pinned to the row's P. The counts are those of
// ward.Counts (internal/tally's order) and the histogram of the timed calls' response times.
const (
	wPool    = 0                        // credits parked on this P
	wCounts  = 1                        // the counts: tally.Words words
	wTicks   = wCounts + tally.Admitted // admissions on this P, which also choose the timed calls
	wRefused = wCounts + tally.Refused  // refusals on this P
	wPassed  = wCounts + tally.Passed
	wFailed  = wCounts + tally.Failed
	wIgnored = wCounts + tally.Ignored
	wLatency = wCounts + tally.Words // the histogram: tally.LatencyWords words
	rowWords = wLatency + tally.LatencyWords
)

// tick counts an admission in row, which the caller is pinned to, and returns the row's count.
func tick(row unsafe.Pointer) int64 {
	w := (*int64)(unsafe.Add(row, wTicks*8))
	stripe.Add(w, 1)
	return stripe.Load(w)
}

// sumOf sums word i over every row ever made.
func (l *Limiter) sumOf(i uintptr) int64 {
	var s int64
	for row := range l.pools.All() {
		s += stripe.Load((*int64)(unsafe.Add(row, i*8)))
	}
	return s
}

// refusable reports whether an acquire whose own pool is empty may be refused on loads alone:
// the central pool holds no credit and none has been parked on a P since a scan found every
// pool empty. A debt refuses too.
func (l *Limiter) refusable() bool {
	m := l.moves.Load()
	c := l.central.Load()
	return c < 0 || c == 0 && l.dry.Load()&1 != 0 && uint32(m) == 0 && l.moves.Load() == m
}

// moveBegun is one move of credits between the central pool and a P's pool begun, as moves
// counts it: one more begun and one more under way.
const moveBegun = 1<<32 + 1

// beginMove marks a move of credits begun; endMove marks it done.
func (l *Limiter) beginMove() { l.moves.Add(moveBegun) }
func (l *Limiter) endMove()   { l.moves.Add(^uint64(0)) }

// The answers of takeSlow.
const (
	slowTaken   = iota // a credit taken
	slowRefused        // none free, or the central pool in debt
	slowMoving         // none found while credits were moving between the pools: wait and look again
)

// takeSlow takes one credit for a caller whose own pool w is empty: a batch from the central
// pool, else one parked on any P. It answers slowRefused when none is free or the central pool is
// in debt, and slowMoving when it found none while credits were moving between the central pool
// and a P's (its caller waits for the move unpinned, then asks again). Its caller is pinned: it
// only loads, adds and compares-and-sets.
func (l *Limiter) takeSlow(w *int64) int {
	for tries := 0; tries < takeTries; tries++ {
		f := l.central.Load()
		switch {
		case f < 0:
			return slowRefused // a lowered limit waits for calls to finish
		case f > 0:
			l.beginMove()
			k := min(f, l.batch.Load())
			if !l.central.CompareAndSwap(f, f-k) {
				l.endMove()
				continue
			}
			if k > 1 {
				l.park(w, k-1)
				l.repay(w) // a limit lowered meanwhile may have swept the pools already
			}
			l.endMove()
			return slowTaken
		default: // the central pool is empty: are credits parked on a P?
			m := l.moves.Load()
			if uint32(m) != 0 {
				continue // credits on their way to or from a pool: look again
			}
			d := l.dry.Load() &^ 1
			if l.stealOne() {
				return slowTaken
			}
			if l.central.Load() == 0 && l.moves.Load() == m {
				l.dry.CompareAndSwap(d, d|1) // fails if a pool filled since d was read
				return slowRefused
			}
		}
	}
	return slowMoving
}

// takeTries bounds takeSlow's looks while pinned: each ends in a credit or a refusal unless
// another caller took the central pool's credits first or credits were moving between the pools.
const takeTries = 16

// park adds k credits to the pool w.
func (l *Limiter) park(w *int64, k int64) {
	if atomic.AddInt64(w, k) == k {
		l.filled()
	}
}

// filled is called after a pool went from empty to holding credits: it raises dry's version and
// clears its bit, so that a refusal scans the pools again.
func (l *Limiter) filled() {
	for d := l.dry.Load(); !l.dry.CompareAndSwap(d, d&^1+2); d = l.dry.Load() {
	}
}

// stealOne takes one credit from any P's pool, the caller's own and the rows left by a growth of
// the table included (another goroutine may have given to the caller's pool since it looked).
func (l *Limiter) stealOne() bool {
	for r := l.pools.Current(); r != nil; r = r.Prev() {
		for i := range r.Len() {
			v := (*int64)(r.Row(i))
			for n := atomic.LoadInt64(v); n > 0; n = atomic.LoadInt64(v) {
				if atomic.CompareAndSwapInt64(v, n, n-1) {
					return true
				}
			}
		}
	}
	return false
}

// rowsOf returns row i of r and, when p is not nil, of p's counts; row is nil when either has no
// row i.
func rowsOf(r *stripe.Rows, p *Partition, i int) (row, xrow unsafe.Pointer) {
	row = r.Row(i)
	if p != nil {
		if xrow = p.counts.Current().Row(i); xrow == nil {
			row = nil
		}
	}
	return row, xrow
}

// pinGrown pins the calling goroutine to its P and returns the P's rows, as rowsOf does, after
// GOMAXPROCS grew past the rows of l.pools or of p's counts: it grows them (Pin grows a table to
// hold the P the goroutine is pinned to) until the P it pins has a row in both. The rows made
// before a growth are kept, so a credit or a count written there is not lost.
func (l *Limiter) pinGrown(p *Partition) (row, xrow unsafe.Pointer) {
	for {
		l.pools.Pin()
		stripe.Unpin()
		if p != nil {
			p.counts.Pin()
			stripe.Unpin()
		}
		r := l.pools.Current()
		if row, xrow = rowsOf(r, p, stripe.PinRow(r)); row != nil {
			return row, xrow
		}
		stripe.Unpin()
	}
}

// gave finishes giving a credit back to the pool w, which holds n after the give, when the pool
// filled from empty, is overfull (it gives half back), the central pool is in debt (the whole
// pool pays it) or a Queue is attached (its waiters are woken).
func (l *Limiter) gave(w *int64, n int64) {
	if n == 1 {
		l.filled()
	} else if b := l.batch.Load(); n > 2*b {
		l.beginMove()
		if atomic.CompareAndSwapInt64(w, n, n-b) {
			l.central.Add(b)
		}
		l.endMove()
	}
	l.repay(w)
	l.freed() // a Queue's waiter takes the credit (queue.go)
	if uint32(l.gate.Load()) == 0 {
		l.tune(false) // the debt may be paid: open the gate again
	}
}

// tune sets the gate from the state it reads: closed (0) while the central pool is in debt or a
// Queue is attached, else 2×batch−1. It reads the gate before the state and writes it by a
// compare-and-set that raises its version, so a tune that read a state since changed fails
// rather than write it; it reports whether the gate holds what it read. A change of the state
// (setLimit, NewQueue) is followed by a tune with changed set, which raises the version even when
// the gate reads the same (a tune that read the state before the change must fail), looping until
// it succeeds; a settle's tune (gave) writes only a gate that differs.
//
// Why a release that finds the gate open may skip the debt: setLimit makes the debt, then closes
// the gate, then sweeps the pools. A release that adds its credit and then finds the gate open
// read it before the close (its credit is in the pool before the sweep reads it), or after a
// tune that found the debt paid.
func (l *Limiter) tune(changed bool) bool {
	g := l.gate.Load()
	var open uint64
	if l.central.Load() >= 0 && atomic.LoadPointer(&l.queues) == nil {
		open = uint64(min(2*l.batch.Load()-1, math.MaxUint32))
	}
	if !changed && open == uint64(uint32(g)) {
		return true
	}
	return l.gate.CompareAndSwap(g, (g>>32+1)<<32|open)
}

// repay sweeps the pool w into the central pool if the central one is in debt. Called after a
// credit entered w: either it sees the debt, or the sweep of the goroutine that lowered the limit
// (after making the debt) sees the credit, since both sides write before they read.
func (l *Limiter) repay(w *int64) {
	if l.central.Load() < 0 {
		l.beginMove()
		if k := atomic.SwapInt64(w, 0); k > 0 {
			l.central.Add(k)
		}
		l.endMove()
	}
}

// setLimit moves the limit to limit, adding or reclaiming the difference; one goroutine at a time
// (New, or the one closing a window).
func (l *Limiter) setLimit(limit int64) {
	old := l.limit.Swap(limit)
	l.batch.Store(max(limit/int64(4*l.pools.Rows()), 1))
	l.central.Add(limit - old)
	for !l.tune(true) {
	}
	if limit >= old {
		return
	}
	for row := range l.pools.All() {
		l.beginMove()
		if k := atomic.SwapInt64((*int64)(row), 0); k > 0 {
			l.central.Add(k)
		}
		l.endMove()
	}
}

// inFlightNow returns limit − central − Σ pools: exact when no call is being admitted or settled,
// a reading of words that move independently otherwise (never below 0).
func (l *Limiter) inFlightNow() int64 {
	n := l.limit.Load() - l.central.Load()
	for r := l.pools.Current(); r != nil; r = r.Prev() { // All's rows, without its closure
		for i := range r.Len() {
			n -= atomic.LoadInt64((*int64)(r.Row(i)))
		}
	}
	return max(n, 0)
}

// totals are the sums over every P's row that a window is the growth of: the timed calls'
// response times (the histogram's sum), how many calls were timed (its count) and the failures.
// Each only grows (the response times modulo 2^64, which the differences survive).
type totals struct{ rtt, timed, failed int64 }

// window returns the samples of the open window, the growth of the rows' totals since the last
// window closed (the in-flight maximum left out: it is the peak word), and the totals it read.
// A call settling meanwhile may be counted in this window or the next, never in both.
func (l *Limiter) window() (atomicwindow.Bucket, totals) {
	var t totals
	for row := range l.pools.All() {
		r := (*[rowWords]int64)(row)
		t.rtt += stripe.Load(&r[wLatency])
		for i := wLatency + 1; i < rowWords; i++ {
			t.timed += stripe.Load(&r[i])
		}
		t.failed += stripe.Load(&r[wFailed])
	}
	var w atomicwindow.Bucket
	w[fRTT], w[fTimed] = t.rtt-l.closed.rtt, t.timed-l.closed.timed
	if t.failed != l.closed.failed {
		w[fDropped] = 1
	}
	return w, t
}
