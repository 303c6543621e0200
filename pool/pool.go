package pool

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// ErrRefused is the refusal of [Pool.Acquire] when the ward says Shed or Later; it matches
// ward.ErrRefused too. A Later refusal carries its wait (ward.RetryAfter reads it).
var ErrRefused = contract.Refusal("pool: refused by the ward")

// ErrClosed is returned by Acquire on a closed pool, and to the callers waiting when it closes.
var ErrClosed = errors.New("pool: closed")

var (
	errHeld   = errors.New("pool: open returned a resource the pool already holds")
	errExited = errors.New("pool: open exited its goroutine without returning")
)

// DefaultDialTimeout is how long an open may run unless [WithDialTimeout] says otherwise: go-redis's
// DialTimeout, long enough for a TLS handshake to a distant region, short enough that a backend
// that stopped answering holds a slot for seconds, not minutes.
const DefaultDialTimeout = 5 * time.Second

// Option configures a [Pool].
type Option func(*config) error

type config struct {
	clock func() int64
	roll  func() float64
	ward  Ward
	every time.Duration
	dial  time.Duration
}

// WithClock replaces the pool's clock (nanoseconds of ward's monotonic clock by default): every
// age, Now and the ward's instants read it, at every decision that needs an instant (the default
// clock is read coarsely on the idle path: see the package doc). A nil clock is an error.
func WithClock(now func() int64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithClock", &c.clock, now) }
}

// WithRand replaces the draws the ward's breaker and backoff take (math/rand/v2 by default); draws
// outside [0, 1) are held into it. A nil source is an error.
func WithRand(roll func() float64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithRand", &c.roll, roll) }
}

// WithWard puts w in front of the backend (the zero Ward by default: none). The pool calls its
// parts under its lock, one call at a time.
func WithWard(w Ward) Option {
	return func(c *config) error { c.ward = w; return nil }
}

// WithEvictEvery starts a goroutine that calls [Pool.Evict] every d until [Pool.Close]. d must be
// > 0; without this option nothing runs in the background, and Evict may be called by hand.
func WithEvictEvery(d time.Duration) Option {
	return positive("WithEvictEvery", d, func(c *config) *time.Duration { return &c.every })
}

// WithDialTimeout bounds each open by d ([DefaultDialTimeout] by default): the context open is
// given ends d after it starts, whatever the caller's context does. d must be > 0.
func WithDialTimeout(d time.Duration) Option {
	return positive("WithDialTimeout", d, func(c *config) *time.Duration { return &c.dial })
}

// positive is the option name setting the duration field returns to d, which must be > 0.
func positive(name string, d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return contract.Field(ErrInvalid, name, d, "> 0")
		}
		*field(c) = d
		return nil
	}
}

// A slot's state, in the low bits of its word; the rest is its generation, moved on whenever the
// slot is lent, taken back or retired, so that a loan that has ended matches no word again.
const (
	stFree uint64 = iota
	stIdle
	stLent
	stMaking
	stMask  = 3
	genStep = stMask + 1
)

// slot is one resource's bookkeeping. Whoever moved the slot's word last owns its plain fields:
// the maker, then the borrower, then the idle stack or a P's cache (a push publishes them, a pop
// acquires them). A cache line of padding keeps two slots lent on two Ps off each other's lines.
type slot struct {
	word   atomic.Uint64 // generation<<2 | state
	passed int64         // loans ended by Release, counted by the releaser that owns the slot (stripe.Add)
	next   atomic.Uint32 // on the idle stack: the slot below, plus one (0: the bottom)
	born   int64
	rested int64
	loan   int
	handed *waiter // the waiter last handed this slot, under the pool's lock: see handTo
	_      [stripe.CacheLine]byte
}

// lend moves the slot, taken off the idle set or made, to a new loan and returns the loan's word.
func (s *slot) lend() uint64 {
	w := (s.word.Load()>>2+1)<<2 | stLent
	s.word.Store(w)
	return w
}

// freeNext moves the slot to its next generation, free.
func (s *slot) freeNext() { s.word.Store((s.word.Load()>>2 + 1) << 2) }

// closedBit marks the gate closed; the rest of the gate is 1 while callers wait, else 0.
const closedBit = 1 << 62

// hot holds the words every Acquire and Release read, each on cache lines of its own.
type hot struct {
	_      [stripe.CacheLine]byte
	top    atomic.Uint64 // the idle stack: version<<32 | top slot plus one (0: empty)
	_      [stripe.CacheLine - unsafe.Sizeof(atomic.Uint64{})]byte
	gate   atomic.Int64 // 1 while callers wait, plus closedBit once closed: 0 is the fast path's go-ahead
	idleN  atomic.Int64 // idle resources, counted only when Limits.Idle < Size
	spread atomic.Bool  // the Ps' caches are in use: set at the first collision on top
	_      [stripe.CacheLine - 2*unsafe.Sizeof(atomic.Int64{}) - unsafe.Sizeof(atomic.Bool{})]byte
	seen   atomic.Int64 // the coarse clock's reading
	awake  atomic.Bool  // the coarse clock's timer is running
	used   atomic.Bool  // seen was read since the timer's last tick
	_      [stripe.CacheLine - unsafe.Sizeof(atomic.Int64{}) - 2*unsafe.Sizeof(atomic.Bool{})]byte
}

// base is the part of a pool that does not depend on T: the slots' words, the idle stack, the Ps'
// caches, the idle count and the coarse clock, with every lock-free path. Its methods are compiled
// once, here, with the calls into ward's internal packages inlined; a Pool instantiated in a
// user's package calls them rather than re-instantiating them there, where those calls would not
// be inlined (see the package doc's "Allocation-free in your build").
type base struct {
	h     hot
	slots []slot
	lim   Limits
	clock func() int64
	timed bool // Keep or Life set: ages are read
	lends bool // the ward has a shedder: every lend takes the lock
	cache stripe.Table
	// The calls' counts, per P (ward.Counts): a loan counts as admitted, with its outcome, when it
	// ends; refusals and abandons when Acquire returns them.
	counts tally.Table
	// The coarse clock (the default clock, when ages are read): gran between its timer's ticks,
	// the timer nil when every decision reads the clock.
	gran  time.Duration
	timer *time.Timer
	// The waiters not in use, a stack linked by their spare fields, under the pool's lock.
	spares *waiter
}

// Pool is a concurrent pool of resources of type T, made by an open function and closed by a
// close function, held to [Limits], with an optional [Ward] in front of the backend.
//
// Acquire lends the most recently released idle resource, opens one when there is room, or waits
// its turn; the [Loan] it returns gives the resource back with Release, or says it broke with
// Destroy. Acquiring an idle resource and releasing it take no lock and allocate nothing. A Pool
// is safe for use by any number of goroutines; it must not be copied after first use. Close it to
// close what it holds and stop its evictor.
//
// Driven from one goroutine with an injected clock and draw, a Pool gives exactly the answers of
// a [Core] with the same limits and ward. Under testing/synctest, make and use a Pool inside one
// bubble: the channels its callers wait on are kept for its later waits.
type Pool[T comparable] struct {
	_           stripe.NoCopy
	b           base
	items       []T // by slot: written by the slot's maker, read by its borrowers
	open        func(context.Context) (T, error)
	close       func(T)
	roll        func() float64
	dialTimeout time.Duration

	mu      sync.Mutex
	g       guard
	index   map[T]uint32 // the slot of every live resource
	live    int
	free    []uint32
	head    *waiter
	tail    *waiter
	waiting int // callers in the queue
	closed  bool
	opened  int64
	failed  int64
	retired int64
	stop    chan struct{}
	done    chan struct{}
}

// Loan is a resource lent by [Pool.Acquire], with the right to give it back once: Release it when
// done, or Destroy it if it broke. A Loan is a small value (the pool, the resource and the loan's
// generation); copying it copies that right, and only the first Release or Destroy of a loan, by
// any copy, counts. Every later one is detected and does nothing, even after the pool has lent
// the same resource to another caller. The zero Loan holds nothing: its Release and Destroy do
// nothing and its Value is T's zero value.
type Loan[T comparable] struct {
	p    *Pool[T]
	item T
	w    uint64 // the slot's word while this loan lasts
	i    uint32
}

// Value returns the resource lent. It stays the caller's to use until the loan's Release or
// Destroy.
func (l Loan[T]) Value() T { return l.item }

// Stats is a snapshot of a pool.
type Stats struct {
	Live    int   // idle, lent and being made
	Idle    int   // sitting idle
	Lent    int   // lent to callers
	Making  int   // being opened
	Waiting int   // callers waiting their turn
	Opened  int64 // opens that produced a resource
	Failed  int64 // opens that failed
	Closed  int64 // resources handed to close
}

// New returns a pool opening resources with open and closing them with close, held to limits.
// open runs on a goroutine of its own, with a context that carries the values of the context of
// the Acquire that needs the resource and ends after the dial timeout ([WithDialTimeout]).
func New[T comparable](open func(context.Context) (T, error), close func(T), limits Limits, opts ...Option) (*Pool[T], error) {
	if open == nil {
		return nil, contract.Field(ErrInvalid, "open", "nil", "a function")
	}
	if close == nil {
		return nil, contract.Field(ErrInvalid, "close", "nil", "a function")
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	cfg := config{roll: draw.Float64, dial: DefaultDialTimeout}
	if err := contract.Apply(ErrInvalid, &cfg, opts); err != nil {
		return nil, err
	}
	injected := cfg.clock != nil
	if !injected {
		cfg.clock = clock.Now
	}
	p := &Pool[T]{
		b: base{
			slots: make([]slot, limits.Size),
			lim:   limits,
			clock: cfg.clock,
			timed: limits.Keep > 0 || limits.Life > 0,
			lends: cfg.ward.Shedder != nil,
		},
		items:       make([]T, limits.Size),
		open:        open,
		close:       close,
		roll:        draw.Func(cfg.roll),
		dialTimeout: cfg.dial,
		g:           guard{w: cfg.ward},
		index:       make(map[T]uint32, min(limits.Size, 1024)),
		free:        make([]uint32, limits.Size),
	}
	for i := range p.free {
		p.free[i] = uint32(limits.Size - 1 - i) // slot 0 first
	}
	p.b.cache.Init(1)
	p.b.counts.Init()
	if p.b.gran = coarseGran(limits); p.b.timed && !injected && p.b.gran > 0 {
		p.b.timer = time.AfterFunc(time.Hour, p.b.tick)
		p.b.timer.Stop()
	}
	if cfg.every > 0 {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.evictor(cfg.every)
	}
	return p, nil
}

// Now returns the instant the pool decides at: nanoseconds of its clock.
func (p *Pool[T]) Now() int64 { return p.b.clock() }

// capped reports whether Limits.Idle can bind (it cannot when it is Size).
func (b *base) capped() bool { return b.lim.Idle < b.lim.Size }

// reserve counts one more idle resource, if Limits.Idle leaves room: a slot is marked idle only
// after its place is counted, and uncounted only after it leaves, so the count bounds the idle
// resources at every instant and never exceeds Limits.Idle.
func (b *base) reserve() bool {
	if !b.capped() {
		return true
	}
	for {
		n := b.h.idleN.Load()
		if n >= int64(b.lim.Idle) {
			return false
		}
		if b.h.idleN.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unreserve uncounts an idle resource that has left the idle set.
func (b *base) unreserve() {
	if b.capped() {
		b.h.idleN.Add(-1)
	}
}

// coarseGran is the coarse clock's tick for limits: a millisecond, or a 64th of the shortest age
// if that is less; 0 (read the clock at every decision) when that would be under 50 µs.
func coarseGran(l Limits) time.Duration {
	g := time.Millisecond
	for _, age := range []time.Duration{l.Keep, l.Life} {
		if age > 0 {
			g = min(g, age/64)
		}
	}
	if g < 50*time.Microsecond {
		return 0
	}
	return g
}

// now is the instant the fast paths decide ages at: the coarse clock's reading while its timer
// ticks, else a fresh reading (which wakes the timer).
func (b *base) now() int64 {
	if b.timer == nil {
		return b.clock()
	}
	if b.h.awake.Load() {
		if !b.h.used.Load() {
			b.h.used.Store(true)
		}
		return b.h.seen.Load()
	}
	now := b.clock()
	b.h.seen.Store(now)
	if b.h.awake.CompareAndSwap(false, true) {
		b.h.used.Store(false)
		b.timer.Reset(b.gran)
	}
	return now
}

// tick refreshes the coarse clock, and goes on ticking only if it was read since the last tick.
func (b *base) tick() {
	b.h.seen.Store(b.clock())
	if b.h.used.Swap(false) && b.h.gate.Load()&closedBit == 0 {
		b.timer.Reset(b.gran)
		return
	}
	b.h.awake.Store(false)
}

// collided records that two goroutines met on the idle stack: from then on the Ps' caches serve.
func (b *base) collided() {
	if !b.h.spread.Load() {
		b.h.spread.Store(true)
	}
}

// push puts slot i, idle, on top of the idle stack.
func (b *base) push(i uint32) {
	s := &b.slots[i]
	for {
		old := b.h.top.Load()
		s.next.Store(uint32(old))
		if b.h.top.CompareAndSwap(old, (old>>32+1)<<32|uint64(i+1)) {
			return
		}
		b.collided()
	}
}

// pop takes the top slot off the idle stack.
func (b *base) pop() (uint32, bool) {
	for {
		old := b.h.top.Load()
		top := uint32(old)
		if top == 0 {
			return 0, false
		}
		next := b.slots[top-1].next.Load()
		if b.h.top.CompareAndSwap(old, (old>>32+1)<<32|uint64(next)) {
			return top - 1, true
		}
		b.collided()
	}
}

// row is the caller's P's cache word: slot plus one, 0 when empty. It is read and written only
// with atomics, so a goroutine that moves to another P after finding it (or, in the build without
// a real P index, shares it with another) stays correct.
func (b *base) row() *int64 {
	r := b.cache.Current()
	if w := r.Row(stripe.PinRow(r)); w != nil {
		stripe.Unpin()
		return (*int64)(w)
	}
	stripe.Unpin()
	w := b.cache.Pin() // GOMAXPROCS grew: the table grows
	stripe.Unpin()
	return (*int64)(w)
}

// take takes the most recently released idle slot off the idle set (see the package doc's "Which
// idle resource"). The slot stays marked idle, and counted, until its taker moves it on.
func (b *base) take() (uint32, bool) {
	if !b.h.spread.Load() {
		return b.pop()
	}
	if v := atomic.SwapInt64(b.row(), 0); v != 0 {
		return uint32(v - 1), true
	}
	if i, ok := b.pop(); ok {
		return i, true
	}
	// Every row ever made, walked by hand: a range over an iterator here would need a closure,
	// and one that escapes where the iterator is not inlined.
	for r := b.cache.Current(); r != nil; r = r.Prev() {
		for k := range r.Len() {
			// A load first: an empty row of another P is read, not written, so its line is
			// not pulled away from that P.
			if w := (*int64)(r.Row(k)); atomic.LoadInt64(w) != 0 {
				if v := atomic.SwapInt64(w, 0); v != 0 {
					return uint32(v - 1), true
				}
			}
		}
	}
	return 0, false
}

// put makes slot i idle, counted already: into the caller's P's cache when the caches serve and
// it is empty, else on the idle stack.
func (b *base) put(i uint32) {
	s := &b.slots[i]
	s.word.Store(s.word.Load()&^stMask | stIdle)
	if b.h.spread.Load() && atomic.CompareAndSwapInt64(b.row(), 0, int64(i)+1) {
		return
	}
	b.push(i)
}

// What lendIdle and giveBack found.
const (
	fastNone  = iota // lendIdle: nothing idle, or callers wait
	fastDone         // lent; given back
	fastStale        // lendIdle: slot i is past its age, out of the idle set: retire it. giveBack: not this loan
	fastSlow         // giveBack: taken back; finish under the lock
	fastWake         // giveBack: idle again, but a caller began to wait or the pool closed meanwhile
)

// lendIdle lends an idle resource while no caller waits: the slot and the loan's word.
func (b *base) lendIdle() (uint32, uint64, int) {
	if b.h.gate.Load() != 0 {
		return 0, 0, fastNone
	}
	i, ok := b.take()
	if !ok {
		return 0, 0, fastNone
	}
	s := &b.slots[i]
	w := s.lend()
	b.unreserve()
	if b.timed && b.lim.stale(b.now(), s.born, s.rested) {
		return i, w, fastStale
	}
	return i, w, fastDone
}

// giveBack takes slot i back from the loan whose word is w, counts pass (1 for a Release, 0 for
// a give-back the caller never saw) in the slot's passed and, on the fast path, makes it idle.
// The compare-and-set gives the caller the slot's plain fields, so the count is written by one
// goroutine at a time and never loses an update: a Release costs no write beyond the slot's line.
func (b *base) giveBack(i uint32, w uint64, pass int64) int {
	s := &b.slots[i]
	if !s.word.CompareAndSwap(w, w+genStep) {
		return fastStale
	}
	stripe.Add(&s.passed, pass)
	if b.timed {
		s.rested = b.now()
	}
	if b.lends || b.h.gate.Load() != 0 || past(s.rested, s.born, b.lim.Life) || !b.reserve() {
		return fastSlow
	}
	b.put(i)
	if b.h.gate.Load() != 0 {
		return fastWake
	}
	return fastDone
}

// Acquire lends a resource: the most recently released idle one, a new one opened when there is
// room, or the next one released, in the order callers came. It returns an error matching
// [ErrRefused] when the ward refuses (Later's carries the wait), ctx's error when ctx ends first,
// [ErrClosed] when the pool is closed, or open's error. A panic in open gives the room it had back
// and continues on this goroutine.
func (p *Pool[T]) Acquire(ctx context.Context) (Loan[T], error) {
	if err := ctx.Err(); err != nil {
		return Loan[T]{}, err
	}
	for !p.b.lends {
		i, w, got := p.b.lendIdle()
		if got == fastDone {
			return p.loan(i, w), nil
		}
		if got == fastNone {
			break
		}
		p.mu.Lock()
		out := p.serve(unread, []uint32{p.retire(i)})
		p.mu.Unlock()
		p.closeAll(out)
	}
	return p.acquireSlow(ctx)
}

// Release gives the resource back. It is kept idle unless Limits.Idle already sit idle, it is
// past Life, or the pool is closed; then it is closed. A Release or Destroy of a loan that has
// ended does nothing.
func (l Loan[T]) Release() {
	if p := l.p; p != nil {
		if k := p.b.giveBack(l.i, l.w, 1); k >= fastSlow { // the fast path calls nothing else
			p.gaveBack(k, l.i)
		}
	}
}

// release gives back the loan uncounted: what the pool does with a loan its caller never had.
func (l Loan[T]) release() {
	l.p.gaveBack(l.p.b.giveBack(l.i, l.w, 0), l.i)
}

// gaveBack finishes what giveBack of slot i answered k.
func (p *Pool[T]) gaveBack(k int, i uint32) {
	switch k {
	case fastSlow:
		p.releaseSlow(i)
	case fastWake:
		p.mu.Lock()
		out := p.serve(unread, p.drainIfClosed(nil))
		p.mu.Unlock()
		p.closeAll(out)
	}
}

// Destroy says the resource broke: it is closed and its room freed for a new one. A Release or
// Destroy of a loan that has ended does nothing.
func (l Loan[T]) Destroy() {
	p := l.p
	if p == nil || !p.b.slots[l.i].word.CompareAndSwap(l.w, l.w+genStep) {
		return
	}
	p.b.counts.AddPair(tally.Admitted, tally.Failed)
	p.mu.Lock()
	now := p.b.clock()
	p.g.back(p.b.slots[l.i].loan, now, false)
	out := p.serve(now, []uint32{p.retire(l.i)})
	p.mu.Unlock()
	p.closeAll(out)
}

// loan is slot i's resource lent under the word w.
func (p *Pool[T]) loan(i uint32, w uint64) Loan[T] {
	return Loan[T]{p: p, item: p.items[i], w: w, i: i}
}

// grant is what a waiter is given: a slot (lent under w, or reserved to make) or a refusal.
type grant struct { // 32 bytes on 64-bit targets (ordered so): each wait copies one
	w    uint64
	err  error
	i    uint32
	make bool
}

// waiter is one Acquire waiting its turn. A waiter is reused by the pool's later waits once it
// is out of the queue and its channel is empty for good, so a wait allocates nothing once the
// pool has had as many waiting at once. Waiters are recycled under the pool's lock, with no
// atomic operation of their own: one that leaves the queue without a grant, or is refused, goes
// back to the spares at once; one handed a slot (to lend or to make) stays with the slot
// (slot.handed) until the slot is handed again, by which time the loan or the make it carried
// has ended, so its owner has received the grant and does not read the waiter again.
//
// A waiter is 64 bytes on 64-bit targets, one cache line of its own (the allocator aligns
// objects of that size to it), which a handoff writes anyway: whether it is queued is read from
// the queue's links (see queued), and the grant a Release hands on is written there too, not on
// the Release's stack, whose deeper frames a goroutine resumed after a wait has not touched lately.
type waiter struct {
	ch         chan grant
	prev, next *waiter
	spare      *waiter // among the spares: the next one
	grant      grant   // what keep handed it, to be sent on ch outside the lock
}

// queued reports whether w is in the queue. Under the lock.
func (p *Pool[T]) queued(w *waiter) bool { return w.prev != nil || p.head == w }

// spareWaiter returns a waiter not in use: a spare, else a new one. Under the pool's lock.
func (b *base) spareWaiter() *waiter {
	w := b.spares
	if w == nil {
		return &waiter{ch: make(chan grant, 1)}
	}
	b.spares, w.spare = w.spare, nil
	return w
}

// keepWaiter makes w, out of the queue and its channel empty for good, a spare. Under the pool's
// lock.
func (b *base) keepWaiter(w *waiter) {
	w.spare, b.spares = b.spares, w
}

// handTo records that slot i is handed to waiter w, and makes a spare of the waiter it was
// handed to before (see waiter). Under the pool's lock.
func (b *base) handTo(i uint32, w *waiter) {
	s := &b.slots[i]
	if old := s.handed; old != nil {
		b.keepWaiter(old)
	}
	s.handed = w
}

func (p *Pool[T]) enqueue(w *waiter) {
	w.prev, w.next = p.tail, nil
	if p.tail == nil {
		p.head = w
	} else {
		p.tail.next = w
	}
	p.tail = w
	// The gate moves only when the queue turns non-empty or empty, so a queue that stays long
	// (callers contending) costs its waits no write to the gate's line.
	if p.waiting++; p.waiting == 1 {
		p.b.h.gate.Add(1)
	}
}

func (p *Pool[T]) dequeue(w *waiter) {
	if w.prev == nil {
		p.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		p.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	if p.waiting--; p.waiting == 0 {
		p.b.h.gate.Add(-1)
	}
}

// give hands g to the first waiter.
func (p *Pool[T]) give(g grant) {
	w := p.head
	p.dequeue(w)
	w.ch <- g
}

func (p *Pool[T]) acquireSlow(ctx context.Context) (Loan[T], error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return Loan[T]{}, ErrClosed
	}
	// The pool's own waiters are reused, never another pool's: a pool's waits stay within the
	// testing/synctest bubble the pool is used in.
	w := p.b.spareWaiter()
	p.enqueue(w)
	if p.head != w {
		// Callers waited before this one: the pool served what it could when they came, and
		// serves every change since (a Release that turns a resource idle rechecks the gate
		// after it, see giveBack), so nothing idle or room to make is left for this one yet.
		p.mu.Unlock()
	} else {
		out := p.serve(unread, nil)
		p.mu.Unlock()
		p.closeAll(out)
	}
	var g grant
	if done := ctx.Done(); done == nil { // a context that never ends: a plain receive
		g = <-w.ch
	} else {
		select {
		case g = <-w.ch:
		case <-done:
			p.mu.Lock()
			if p.queued(w) {
				p.dequeue(w)
				p.b.keepWaiter(w) // never served: its channel stays empty
				p.mu.Unlock()
				p.b.counts.Add(tally.Abandoned)
				return Loan[T]{}, ctx.Err()
			}
			p.mu.Unlock()
			if g = <-w.ch; g.err != nil { // served while giving up
				p.unwait(w)
			} else {
				p.abandon(g) // undo it; w stays with the slot
			}
			p.b.counts.Add(tally.Abandoned)
			return Loan[T]{}, ctx.Err()
		}
	}
	if g.err != nil {
		p.unwait(w)
		if g.err != ErrClosed {
			p.b.counts.Add(tally.Refused)
		}
		return Loan[T]{}, g.err
	}
	if !g.make { // w stays with the slot
		return p.loan(g.i, g.w), nil
	}
	return p.make(ctx, g.i)
}

// unwait makes a spare of w, refused and its refusal received, unless the pool has closed: no
// wait is made from then on, and Close let the spares go.
func (p *Pool[T]) unwait(w *waiter) {
	p.mu.Lock()
	if !p.closed {
		p.b.keepWaiter(w)
	}
	p.mu.Unlock()
}

// abandon undoes g, served to a caller that gave up.
func (p *Pool[T]) abandon(g grant) {
	switch {
	case g.err != nil:
	case g.make:
		p.mu.Lock()
		now := p.b.clock()
		p.g.back(p.b.slots[g.i].loan, now, false)
		p.unmake(g.i)
		out := p.serve(now, nil)
		p.mu.Unlock()
		p.closeAll(out)
	default:
		p.loan(g.i, g.w).release()
	}
}

// unmake frees a slot reserved to make. Under the lock.
func (p *Pool[T]) unmake(i uint32) {
	s := &p.b.slots[i]
	s.freeNext()
	s.loan = 0
	p.free = append(p.free, i)
	p.live--
}

// dialing is one open under way: what it produced, for the caller waiting on done, or for the
// pool when the caller has gone. Its fields are written under the pool's lock.
type dialing struct {
	done     chan struct{} // closed when the outcome is in
	finished bool
	gone     bool // the caller stopped waiting
	w        uint64
	err      error
	panicked bool
	panicVal any
}

// make opens a resource into slot i, reserved for it. The open runs on a goroutine of its own
// under the pool's dial timeout, so that the caller can return at its own deadline while the open
// finishes and its resource goes to the next caller.
func (p *Pool[T]) make(ctx context.Context, i uint32) (Loan[T], error) {
	d := &dialing{done: make(chan struct{})}
	go p.dial(context.WithoutCancel(ctx), i, d)
	select {
	case <-d.done:
	case <-ctx.Done():
		p.mu.Lock()
		if !d.finished {
			d.gone = true // the dial's outcome goes to the pool
			p.mu.Unlock()
			p.b.counts.Add(tally.Abandoned)
			return Loan[T]{}, ctx.Err()
		}
		p.mu.Unlock()
	}
	if d.panicked {
		p.b.counts.AddPair(tally.Admitted, tally.Failed)
		panic(d.panicVal)
	}
	if d.err != nil {
		if d.err != ErrClosed {
			p.b.counts.AddPair(tally.Admitted, tally.Failed) // admitted to open, and the open failed
		}
		return Loan[T]{}, d.err
	}
	l := p.loan(i, d.w)
	if err := ctx.Err(); err != nil {
		l.release() // the caller gave up as the open finished: the resource goes to the pool
		p.b.counts.Add(tally.Abandoned)
		return Loan[T]{}, err
	}
	return l, nil
}

// dial runs open for slot i and settles its outcome: to the caller waiting on d, or, when the
// caller has gone, to the pool (the resource to the next waiter or the idle set).
func (p *Pool[T]) dial(ctx context.Context, i uint32, d *dialing) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover() // nil: open called runtime.Goexit
		p.mu.Lock()
		p.failed++
		now := p.b.clock()
		p.g.unmade(now, p.roll())
		p.g.back(p.b.slots[i].loan, now, false)
		p.unmake(i)
		out := p.serve(now, nil)
		d.finished, d.err, d.panicked, d.panicVal = true, errExited, v != nil, v
		gone := d.gone
		p.mu.Unlock()
		p.closeAll(out)
		close(d.done)
		if gone && v != nil {
			panic(v) // nobody is waiting for it: the panic continues here
		}
	}()
	item, err := p.open(ctx)
	returned = true
	p.settle(i, item, err, d)
}

// settle records what the open for slot i returned and hands it on.
func (p *Pool[T]) settle(i uint32, item T, err error, d *dialing) {
	now := p.b.clock()
	s := &p.b.slots[i]
	var out []uint32
	p.mu.Lock()
	switch _, known := p.index[item]; {
	case err != nil:
		p.failed++
		p.g.unmade(now, p.roll())
		p.g.back(s.loan, now, false)
		p.unmake(i)
	case known: // open handed back a resource the pool already holds
		p.opened++
		p.g.made(now)
		p.g.back(s.loan, now, true)
		p.unmake(i)
		err = errHeld
	case p.closed:
		p.opened++
		p.g.made(now)
		p.g.back(s.loan, now, true)
		p.items[i] = item // closed in its slot, which stays taken until it is
		s.freeNext()
		out = append(out, i)
		err = ErrClosed
	default:
		p.opened++
		p.g.made(now)
		p.items[i], s.born = item, now
		p.index[item] = i
		d.w = s.lend()
		if d.gone { // nobody waits for it: it is taken back at once
			s.word.Store(d.w + genStep)
			p.g.back(s.loan, now, true)
			s.loan = 0
			s.rested = now
			var to *waiter
			if out, to = p.keep(i, now, out); to != nil {
				to.ch <- to.grant // its channel is empty: this never blocks
			}
		}
	}
	d.finished, d.err = true, err
	out = p.serve(now, out)
	p.mu.Unlock()
	close(d.done)
	p.closeAll(out)
}

// unread stands for an instant not read yet: serve reads the clock when it first needs one. (A
// clock that reads exactly this is read again, which gives the same reading.)
const unread = math.MinInt64

// serve hands what the pool can to the callers waiting, first come first served, at now (or at
// the clock's reading when it first needs one, if now is unread). Under the lock; returns out
// with the slots to close appended.
func (p *Pool[T]) serve(now int64, out []uint32) []uint32 {
	for p.head != nil {
		if i, ok := p.b.take(); ok {
			if now == unread {
				now = p.b.clock()
			}
			s := &p.b.slots[i]
			if p.b.timed && p.b.lim.stale(now, s.born, s.rested) {
				out = append(out, p.retire(i))
				p.b.unreserve()
				continue
			}
			loan, ok := p.g.lend(now)
			if !ok {
				p.b.put(i) // still counted
				p.refuseAll(ErrRefused)
				return out
			}
			s.loan = loan
			w := s.lend()
			p.b.unreserve()
			p.b.handTo(i, p.head)
			p.give(grant{i: i, w: w})
			continue
		}
		if p.live >= p.b.lim.Size {
			return out
		}
		if now == unread {
			now = p.b.clock()
		}
		kind, wait, loan := p.g.admit(now, p.roll())
		switch kind {
		case Later:
			p.refuseAll(contract.Wait(ErrRefused, wait))
			return out
		case Shed:
			p.refuseAll(ErrRefused)
			return out
		}
		i := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		s := &p.b.slots[i]
		s.loan = loan
		s.word.Store(s.word.Load()&^stMask | stMaking)
		p.live++
		p.b.handTo(i, p.head)
		p.give(grant{i: i, make: true})
	}
	return out
}

func (p *Pool[T]) refuseAll(err error) {
	for p.head != nil {
		p.give(grant{err: err})
	}
}

// keep places slot i, taken back from its loan at now and not idle: with the first waiter, in
// the idle set if Limits.Idle leaves room, or out to be closed. Under the lock; a waiter it
// hands the slot to is out of the queue and returned, for the caller to send its grant
// (to.ch <- to.grant) once the lock is released, so that waking it is not done under the lock.
// The loan's word is the one the slot's taking back moved it to (still marked lent, a generation
// never lent before), taken as it is: handing a slot on writes no word.
func (p *Pool[T]) keep(i uint32, now int64, out []uint32) (_ []uint32, to *waiter) {
	s := &p.b.slots[i]
	if p.closed || past(now, s.born, p.b.lim.Life) {
		return append(out, p.retire(i)), nil
	}
	if p.head != nil {
		if loan, ok := p.g.lend(now); ok {
			s.loan = loan
			to = p.head
			p.dequeue(to)
			p.b.handTo(i, to)
			to.grant = grant{i: i, w: s.word.Load()}
			return out, to
		}
		p.refuseAll(ErrRefused)
	}
	if p.b.reserve() {
		p.b.put(i)
		return out, nil
	}
	return append(out, p.retire(i)), nil
}

// retire takes slot i's resource out of the pool and returns i for closeAll: the slot stays
// taken, and counted live, until its resource is closed, so that a new one is never opened
// beside one still closing. Under the lock.
func (p *Pool[T]) retire(i uint32) uint32 {
	s := &p.b.slots[i]
	delete(p.index, p.items[i])
	s.freeNext()
	s.loan = 0
	return i
}

// closeAll closes the resources of retired slots, outside the lock, then frees the slots and
// serves the waiters with the room they leave (which may retire more).
func (p *Pool[T]) closeAll(out []uint32) {
	for len(out) > 0 {
		for _, i := range out {
			p.close(p.items[i])
		}
		p.mu.Lock()
		var zero T
		for _, i := range out {
			p.items[i] = zero
			p.free = append(p.free, i)
			p.live--
			p.retired++
		}
		out = p.serve(unread, out[:0])
		p.mu.Unlock()
	}
}

// releaseSlow takes back slot i, claimed from its loan, under the lock.
func (p *Pool[T]) releaseSlow(i uint32) {
	s := &p.b.slots[i]
	p.mu.Lock()
	// The instant it is kept or handed on at: giveBack's reading when ages are read, as a Release
	// that needs no lock decides; none without ages (nothing reads it then); the clock's when the
	// shedder times the loan.
	now := s.rested
	if p.b.lends {
		now = p.b.clock()
		s.rested = now
	} else if !p.b.timed {
		now = unread
	}
	p.g.back(s.loan, now, true)
	s.loan = 0
	out, to := p.keep(i, now, nil)
	if to != nil {
		// Handed on, it changed neither the idle set nor the room to make, which every change
		// serves as it happens: nothing more to serve. The waiter is woken outside the lock.
		p.mu.Unlock()
		to.ch <- to.grant // its channel is empty: this never blocks
		return
	}
	out = p.serve(unread, out) // what it changed, at the clock's reading
	p.mu.Unlock()
	p.closeAll(out)
}

// drainIfClosed retires everything idle if the pool is closed. Under the lock.
func (p *Pool[T]) drainIfClosed(out []uint32) []uint32 {
	if !p.closed {
		return out
	}
	for {
		i, ok := p.b.take()
		if !ok {
			return out
		}
		out = append(out, p.retire(i))
		p.b.unreserve()
	}
}

// Evict closes every idle resource that has sat longer than Keep or lived longer than Life, and
// returns how many it closed. [WithEvictEvery] calls it on a timer; Acquire never lends a stale
// resource either way.
func (p *Pool[T]) Evict() int {
	p.mu.Lock()
	now := p.b.clock()
	var keep, out []uint32
	for {
		i, ok := p.b.take()
		if !ok {
			break
		}
		s := &p.b.slots[i]
		if p.b.lim.stale(now, s.born, s.rested) {
			out = append(out, p.retire(i))
			p.b.unreserve()
		} else {
			keep = append(keep, i) // still counted: nobody takes its place meanwhile
		}
	}
	for k := len(keep) - 1; k >= 0; k-- { // back, in the order they were taken
		p.b.push(keep[k])
	}
	out = p.serve(now, out)
	p.mu.Unlock()
	n := len(out)
	p.closeAll(out)
	return n
}

func (p *Pool[T]) evictor(every time.Duration) {
	defer close(p.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.Evict()
		case <-p.stop:
			return
		}
	}
}

// Close closes every idle resource, refuses the callers waiting and every later Acquire with
// [ErrClosed], and stops the evictor; a resource released after Close is closed, and so is one an
// open still under way produces. Closing again does nothing.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.b.h.gate.Add(closedBit)
	p.b.spares = nil // no wait is made from here on: the spares go
	out := p.drainIfClosed(nil)
	p.refuseAll(ErrClosed)
	p.mu.Unlock()
	p.closeAll(out)
	if p.b.timer != nil {
		p.b.timer.Stop() // a tick already under way sees closedBit and stops
	}
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
}

// Refusal returns the share of new connections the ward's breaker refuses now; 0 without one.
func (p *Pool[T]) Refusal() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.g.refusal(p.b.clock())
}

// Counts returns the pool's counts since New ([ward.Counts]), one call of Acquire each. A loan
// is counted when it ends, as admitted and settled at once: Release is a Pass, Destroy a Fail,
// and an Acquire whose open failed (an error, a panic, a resource the pool already holds) is a
// loan admitted to open that failed at once; so Admitted is Passed + Failed + Ignored (Ignored
// stays zero), and the loans under way are [Stats].Lent. Refused is an Acquire the ward refused
// ([ErrRefused]); Abandoned is one whose context ended while it waited for a resource or its
// open. An Acquire whose context was done when it was called, and one that met a closed pool
// ([ErrClosed]), count nothing; nor does a Release or Destroy of a loan that has ended. A
// Release is counted in the resource's own bookkeeping, which its releaser owns; the rarer counts
// sit in per-P rows; both are folded here.
func (p *Pool[T]) Counts() ward.Counts {
	c := p.b.counts.Counts()
	var n uint64
	for i := range p.b.slots {
		n += uint64(stripe.Load(&p.b.slots[i].passed))
	}
	c.Admitted += n
	c.Passed += n
	return c
}

// Stats returns a snapshot of the pool. Its fields are read one after another while the pool
// runs, so under concurrent use they need not add up; Idle never exceeds Limits.Idle.
func (p *Pool[T]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{Live: p.live, Waiting: p.waiting, Opened: p.opened, Failed: p.failed, Closed: p.retired}
	for i := range p.b.slots {
		switch p.b.slots[i].word.Load() & stMask {
		case stIdle:
			st.Idle++
		case stLent:
			st.Lent++
		case stMaking:
			st.Making++
		}
	}
	if p.b.capped() {
		// The count, not the sweep: a slot seen idle early in the sweep may have been lent, and
		// another made idle in its place, before the sweep ends.
		st.Idle = int(p.b.h.idleN.Load())
	}
	return st
}
