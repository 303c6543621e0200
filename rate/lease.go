package rate

import (
	"math"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// A BucketLimiter under contention leases tokens to Ps.
//
// The TAT is a timeline counted in the bucket's units (gcra.go): every token is a slot one unit
// long times 2^shift, and a call at count x (now's count) may take the slots that start at or
// after x and end within tau of it (GCRA's whole rule). A lease is a run of such slots, [lo, hi),
// claimed from the shared timeline by one compare-and-set and then spent by the goroutines
// pinned to one P, a slot at a time, on that P's own cache line: a call at x takes the slots from
// max(lo, x), if they end by hi and within tau of x. Slots that time has passed are skipped,
// never spent late, so every admission, leased or not, sits in a slot of its own that starts at
// or after its count and ends within the burst of it: at most burst + the tokens the grid brought
// in any stretch of time, exactly the single bucket's promise. Leasing never over-admits.
//
// What it costs is room: slots leased to one P are spent from the shared timeline while another P
// may be refused. A lease takes at most 1/(2×rows) of the room the bucket holds when it is taken
// (rows: the Ps, rounded up to a power of two). When a P's lease runs short it gives the unspent
// slots back with the same compare-and-set that takes the next lease, provided nobody claimed
// slots after it (the shared TAT still ends where the lease ends) and nothing moved the TAT back
// since (gen); otherwise it keeps the lease and takes the call's slots alone, so a P holds one
// lease at a time and the leases together hold at most half the burst. A limiter one goroutine
// calls never leases, and one whose calls all run on one P hands every lease back in full before
// it decides on the shared timeline: its decisions are the single bucket's, call for call.
//
// The TAT only moves back in two ways: a pull-back (an instant of another origin) and a Release
// on the shared word. Each counts itself in gen before its compare-and-set, and a lease records
// the gen it was taken in: a lease taken before either is neither spent nor given back, so no
// slot is handed out twice.
//
// A limiter starts without leases. The first time two callers collide on the TAT (a
// compare-and-set fails) leasing is marked wanted, when its burst is at least 4 tokens a row (rows
// counted when it was made), so that a lease can hold 2; the next call makes the table of leases.
// A limiter that is never contended stays exactly one word and allocates nothing more. Leasing
// needs the real P index: in the builds without it (stripe.Pinned false) the TAT stays the only
// state.

// The words of a P's row of leases. Only goroutines pinned to the row's P touch them.
const (
	wLo    = iota // the first slot of the lease not spent
	wHi           // the end of the lease
	wGen          // the pull-back generation the lease was taken in
	wStart        // the lease's first slot
	leaseWords
)

// The states of BucketLimiter.leasing, in its low bits (leaseState).
const (
	leaseOff      int32 = iota // one shared word
	leaseWanted                // a compare-and-set on the TAT failed: the next call starts leasing
	leaseStarting              // one caller is making the table of leases
	leaseOn                    // every call goes through its P's lease

	leaseState int32 = 3 // the bits of leasing that hold the state
	// A bit of leasing beside the state, set at construction and never changed: the limiter counts
	// its calls (WithCounts). One load then tells Allow both whether it may take its short path
	// (no other bit set) and whether to count.
	counting int32 = 4
)

// state returns the leasing state: leaseOff, leaseWanted, leaseStarting or leaseOn.
func (b *BucketLimiter) state() int32 { return b.leasing.Load() & leaseState }

// collided records that a compare-and-set on the TAT failed. Small enough to inline, so the
// shared-word path stays a leaf.
func (b *BucketLimiter) collided() {
	if st := b.leasing.Load(); b.leasable && st&leaseState == leaseOff {
		b.leasing.CompareAndSwap(st, st|leaseWanted)
	}
}

// leasingOn reports whether calls go to leased: leasing is on, or wanted.
func (b *BucketLimiter) leasingOn() bool { return b.state() != leaseOff }

// start makes the table of leases if leasing is wanted, and reports whether it is on.
func (b *BucketLimiter) start() bool {
	st := b.leasing.Load() // the state, and the counting bit kept through every change
	if st&leaseState == leaseWanted && b.leasing.CompareAndSwap(st, st^leaseWanted|leaseStarting) {
		b.leases.Init(leaseWords)
		b.leasing.Store(st&^leaseState | leaseOn)
		return true
	}
	return b.state() == leaseOn
}

// leased answers a call for inc units of tokens at x from the caller's P's lease, taking a new
// lease when it runs short. A refusal returns the TAT it was refused against.
func (b *BucketLimiter) leased(x, inc uint64) (bool, uint64) {
	if b.state() != leaseOn && !b.start() {
		return b.take(x, inc) // another caller is making the table
	}
	r := b.leases.Current()
	row := r.Row(stripe.PinRow(r))
	if row == nil { // GOMAXPROCS grew past the rows: Pin grows them
		stripe.Unpin()
		row = b.leases.Pin()
	}
	if b.spend(row, x, inc) {
		stripe.Unpin()
		return true, 0
	}
	ok, tat := b.renew(row, x, inc)
	stripe.Unpin()
	return ok, tat
}

// word returns the address of word w of a row of leases.
func word(row unsafe.Pointer, w uintptr) *int64 { return (*int64)(unsafe.Add(row, w*8)) }

// load and store read and write a word of a row as the uint64 of units it holds.
func load(p *int64) uint64     { return uint64(stripe.Load(p)) }
func store(p *int64, v uint64) { stripe.Store(p, int64(v)) }

// spend takes inc units of slots at x from the lease in row, if it holds them: slots from max(lo,
// x) that end by its end and within tau of x, in a lease taken since the last write that moved
// the TAT back (gen).
func (b *BucketLimiter) spend(row unsafe.Pointer, x, inc uint64) bool {
	lo := word(row, wLo)
	s, h := max(load(lo), x), load(word(row, wHi))
	if s <= h && h-s >= inc && s-x <= b.tau-inc && stripe.Load(word(row, wGen)) == b.gen.Load() {
		store(lo, s+inc)
		return true
	}
	return false
}

// renew answers a call its P's lease could not. When the shared TAT still ends where the lease
// does and nothing moved the TAT back since the lease was taken, the lease's unspent slots are
// given back and the call's slots, plus a new lease when the bucket has room, are taken in one
// compare-and-set. When the lease still holds slots it cannot give back, the call's slots alone
// are taken and the lease is kept, so a P strands at most one lease. Entered pinned to the row's
// P. A refusal returns the TAT it was refused against.
func (b *BucketLimiter) renew(row unsafe.Pointer, x, inc uint64) (bool, uint64) {
	lo, hi, gen, first := word(row, wLo), word(row, wHi), word(row, wGen), word(row, wStart)
	l, h, g := load(lo), load(hi), stripe.Load(gen)
	rows := uint64(b.leases.Current().Len())
	for {
		// gen is read after the TAT: a write that moved the TAT back before this read counted
		// itself first, so a lease taken before it is never given back over what came after.
		old := b.tat.Load()
		valid := g == b.gen.Load()
		base := old
		if old == h && l < h && valid { // nobody claimed after the lease, nor moved the TAT back
			base = l
		}
		tat := b.pull(base, x)
		if _, ok := b.grant(tat, x, inc); !ok {
			if tat != old && b.tat.CompareAndSwap(old, tat) {
				store(lo, tat) // given back, or pulled back: the lease is gone
				store(hi, tat)
			}
			return false, tat
		}
		start := max(tat, x)
		keep := base == old && valid && l < h && h > x // slots left that cannot go back: keep them
		claim := inc
		// The room past this call's slots, in whole tokens, shared among the rows; grant checked
		// that start+inc fits within tau of x, so none of this overflows but the end of the range,
		// checked. A call of no tokens takes no lease.
		if extra := (b.tau - (start - x) - inc) >> b.shift / (2 * rows); extra > 0 && inc > 0 && !keep &&
			start <= math.MaxUint64-inc-extra<<b.shift {
			claim += extra << b.shift
		}
		// The generation the new lease is taken in, read before the compare-and-set: a write that
		// moves the new TAT back reads it after the compare-and-set, and counts itself first.
		gn := b.gen.Load()
		if b.tat.CompareAndSwap(old, start+claim) {
			if !keep {
				store(first, start)
				store(lo, start+inc)
				store(hi, start+claim)
				stripe.Store(gen, gn)
			}
			return true, 0
		}
	}
}

// pull returns the TAT as a call at x reads it: pulled back to x plus tau when it is skewed,
// counting the pull-back in gen first, so that no lease taken before it is spent, or given back
// over slots claimed after it.
func (b *BucketLimiter) pull(tat, x uint64) uint64 {
	if b.skewed(tat, x) {
		b.gen.Add(1)
		return x + b.tau // tat is more than tau past x: no overflow
	}
	return tat
}

// releaseLeased gives a token back to the caller's P's lease (giveBack).
func (b *BucketLimiter) releaseLeased(x uint64) {
	r := b.leases.Current()
	row := r.Row(stripe.PinRow(r))
	if row == nil {
		stripe.Unpin()
		row = b.leases.Pin()
	}
	b.giveBack(row, x)
	stripe.Unpin()
}

// giveBack returns the last spent slot of the lease in row, when the lease holds it and time has
// not passed it, as a single bucket gives back its last slot. A slot before the lease's start
// belongs to whoever claimed it, so a token the lease cannot hold is dropped.
func (b *BucketLimiter) giveBack(row unsafe.Pointer, x uint64) {
	lo := word(row, wLo)
	if next, ok := b.release(load(lo), max(load(word(row, wStart)), x)); ok {
		store(lo, next)
	}
}
