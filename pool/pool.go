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

// closedBit marks the gate closed; the rest of the gate counts the callers waiting that no grant
// is owed to yet.
const closedBit = 1 << 62

// hot holds the words every Acquire and Release read, each on cache lines of its own.
type hot struct {
	_      [stripe.CacheLine]byte
	top    atomic.Uint64 // the idle stack: version<<32 | top slot plus one (0: empty)
	_      [stripe.CacheLine - unsafe.Sizeof(atomic.Uint64{})]byte
	gate   atomic.Int64 // the callers waiting unserved, plus closedBit once closed: 0 is the fast path's go-ahead
	idleN  atomic.Int64 // idle resources, counted only when Limits.Idle < Size
	left   atomic.Int64 // callers that gave up and wait to leave (see leave)
	spread atomic.Bool  // the Ps' caches are in use: set at the first collision on top
	_      [stripe.CacheLine - 3*unsafe.Sizeof(atomic.Int64{}) - unsafe.Sizeof(atomic.Bool{})]byte
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
	// The grants to the callers waiting: every one that waits receives from it (see claim).
	hand chan grant
	// The first caller counted while others wait to leave wakes one of them (see leave).
	poke chan struct{}
}

// Pool is a concurrent pool of resources of type T, made by an open function and closed by a
// close function, held to [Limits], with an optional [Ward] in front of the backend.
//
// Acquire lends the most recently released idle resource, opens one when there is room, or waits
// its turn; the [Loan] it returns gives the resource back with Release, or says it broke with
// Destroy. Acquiring an idle resource and releasing it take no lock and allocate nothing, and
// neither does a Release that hands its resource to a caller waiting. A Pool is safe for use by
// any number of goroutines; it must not be copied after first use. Close it to close what it
// holds and stop its evictor.
//
// Driven from one goroutine with an injected clock and draw, a Pool gives exactly the answers of
// a [Core] with the same limits and ward. Under testing/synctest, make and use a Pool inside one
// bubble: its callers wait on a channel made with it.
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
			hand:  make(chan grant, min(limits.Size, maxBuffered)),
			poke:  make(chan struct{}, 1),
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
	fastHand         // giveBack: owed to a caller waiting (handOn claimed one): send it with handTo
)

// lendIdle lends an idle resource, which the caller may take (no caller waits: see Acquire): the
// slot and the loan's word.
func (b *base) lendIdle() (uint32, uint64, int) {
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
// a give-back the caller never saw) in the slot's passed and, on the fast path, hands it to a
// caller waiting or makes it idle. The compare-and-set gives the caller the slot's plain fields,
// so the count is written by one goroutine at a time and never loses an update: a Release costs
// no write beyond the slot's line.
//
// A slot handed on keeps the word the compare-and-set moved it to (still lent, a generation never
// lent before) as its new loan's: the handoff writes no word, takes no lock, and wakes the waiter
// once, with its grant. giveBack only claims the waiter (fastHand); the caller sends the grant
// (handTo) from its own frame, two calls shallower than here: with thousands of goroutines taking
// turns on a core, a profile puts much of a handoff's time in that send, and made from Release's
// frame it ran faster (the pool's contended benchmark, 512× Size goroutines at -cpu 1: its time
// over a channel pool's in the same process fell from 1.106 to 1.002, the median of 24 rounds
// each, and was lower in 18 of the 24).
func (b *base) giveBack(i uint32, w uint64, pass int64) int {
	s := &b.slots[i]
	if !s.word.CompareAndSwap(w, w+genStep) {
		return fastStale
	}
	stripe.Add(&s.passed, pass)
	if b.h.gate.Load() != 0 && b.handOn(i) {
		return fastHand
	}
	if b.timed {
		s.rested = b.now()
	}
	if b.lends || past(s.rested, s.born, b.lim.Life) || !b.reserve() {
		return fastSlow
	}
	b.put(i)
	if b.h.gate.Load() != 0 {
		return fastWake
	}
	return fastDone
}

// handOn owes slot i, taken back, to a caller waiting (claim), if one waits that no grant is owed
// to, the ward has no shedder (which lends under the lock) and the resource is not past Life; the
// caller then sends it with handTo. Without Life it reads no clock: a resource handed on does not
// rest, and its rest is timed only when it turns idle.
func (b *base) handOn(i uint32) bool {
	if b.lends {
		return false
	}
	if s := &b.slots[i]; b.lim.Life > 0 {
		if s.rested = b.now(); past(s.rested, s.born, b.lim.Life) {
			return false
		}
	}
	return b.claim()
}

// handTo sends slot i, which giveBack took back from the loan whose word was w and found owed to a
// caller waiting (fastHand), to the callers waiting: the loan's next word, still lent, is the new
// loan's.
func (b *base) handTo(i uint32, w uint64) { b.hand <- grant{w: w + genStep, i: i} }

// claim owes one caller waiting a grant on hand, if one waits that no grant is owed to (the pool
// is then open): the caller must then send it one, and only one. A caller that gives up while it
// waits claims too, for itself: then no grant is owed to it; if none can be claimed, every one
// waiting is owed a grant, and it must receive one and pass it on.
//
// The callers waiting are not named: every one receives from hand, in the order they began to
// receive (the channel's), and the gate counts those no grant is owed to yet. So the callers
// receiving always number at least the grants owed, and every grant sent is received by exactly
// one of them. Close sets the count to 0 as it sets closedBit, and it stays 0.
func (b *base) claim() bool { return b.step(-1) }

// claimAll owes a grant to every caller waiting that none is owed to yet, and returns how many.
func (b *base) claimAll() int64 {
	for {
		g := b.h.gate.Load()
		if n := g &^ closedBit; n == 0 || b.h.gate.CompareAndSwap(g, g&closedBit) {
			return n
		}
	}
}

// join counts the caller among the waiters when others already wait unserved: then nothing is
// idle and there is no room to make that the pool has not served (whoever changes that serves the
// waiters, see giveBack and serve), and the caller need not look. The first to wait counts itself
// under the pool's lock instead, and serves before it lets the lock go: so no caller counted
// needs the lock before it receives, and a send made under the lock never waits on one that does.
//
// join wakes no caller waiting to leave: such a caller found the count at 0 when its claim
// failed, and the count leaves 0 only in first, which wakes it; join moves a count that is not 0,
// which a leaver that looks again can take already.
func (b *base) join() bool { return b.step(1) }

// wake wakes one caller waiting to leave, unless one is to be woken already.
func (b *base) wake() {
	select {
	case b.poke <- struct{}{}:
	default:
	}
}

// step moves the count of waiters no grant is owed to by d, unless it is 0 (or the pool closed).
func (b *base) step(d int64) bool {
	for {
		g := b.h.gate.Load()
		if g == 0 || g&closedBit != 0 {
			return false
		}
		if b.h.gate.CompareAndSwap(g, g+d) {
			return true
		}
	}
}

// maxBuffered bounds hand's buffer. Grants go into it only for callers counted as waiting that have
// not yet begun to receive, who take them without waiting; a send to a full buffer waits for one
// of them, which needs nothing the sender holds.
const maxBuffered = 64

// Acquire lends a resource: the most recently released idle one, a new one opened when there is
// room, or the next one released, in the order callers begin to receive it (see the package doc's
// "The concurrent pool"). It returns an error matching [ErrRefused] when the ward refuses (Later's
// carries the wait), ctx's error when ctx ends first, [ErrClosed] when the pool is closed, or
// open's error. A panic in open gives the room it had back and continues on this goroutine.
func (p *Pool[T]) Acquire(ctx context.Context) (Loan[T], error) {
	if err := ctx.Err(); err != nil {
		return Loan[T]{}, err
	}
	// While callers wait, a new one queues behind them: the gate is read here, before any call,
	// so that a caller that will wait makes no call it does not need.
	for !p.b.lends && p.b.h.gate.Load() == 0 {
		i, w, got := p.b.lendIdle()
		if got == fastDone {
			return p.loan(i, w), nil
		}
		if got == fastNone {
			break
		}
		p.retireStale(i)
	}
	// Wait its turn: counted among the waiters, it receives its grant here, in Acquire's own
	// frame when its context never ends (in await's, with its select, when it can); the first to
	// wait, which serves the others, and every grant but a lent resource take calls of their own.
	done := ctx.Done() // before the caller is counted: a waiter counted receives a grant
	if !p.b.join() {
		return p.acquireFirst(ctx, done)
	}
	g, served := p.b.receive(done)
	if served && g.kind == grantLent {
		return p.loan(g.i, g.w), nil
	}
	return p.use(ctx, g, served)
}

// retireStale retires slot i, which Acquire took off the idle set past its age.
func (p *Pool[T]) retireStale(i uint32) {
	p.mu.Lock()
	out := p.serve(unread, []uint32{p.retire(i)})
	p.mu.Unlock()
	p.closeAll(out)
}

// Release gives the resource back. It is kept idle unless Limits.Idle already sit idle, it is
// past Life, or the pool is closed; then it is closed. A Release or Destroy of a loan that has
// ended does nothing.
func (l Loan[T]) Release() {
	if p := l.p; p != nil {
		if k := p.b.giveBack(l.i, l.w, 1); k >= fastSlow { // the fast path calls nothing else
			if k == fastHand { // sent from this frame: see giveBack
				p.b.handTo(l.i, l.w)
				return
			}
			p.gaveBack(k, l.i, l.w)
		}
	}
}

// release gives back the loan uncounted: what the pool does with a loan its caller never had.
func (l Loan[T]) release() {
	l.p.gaveBack(l.p.b.giveBack(l.i, l.w, 0), l.i, l.w)
}

// gaveBack finishes what giveBack of slot i, lent under the word w, answered k.
func (p *Pool[T]) gaveBack(k int, i uint32, w uint64) {
	switch k {
	case fastHand:
		p.b.handTo(i, w)
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

// grant is what a waiter is given: a slot lent under the word w or reserved to make, or a
// refusal. 16 bytes and no pointer: a send to a caller already blocked on the channel writes it
// straight into that caller's stack, which is cold by the time a Release comes, so the fewer
// bytes the fewer of its lines the send fetches, and with no pointer it needs no write barrier.
type grant struct {
	w    uint64    // grantLent: the loan's word; grantLater: the wait the refusal carries, in ns
	i    uint32    // grantLent, grantMake: the slot
	kind grantKind // what the grant is
}

// grantKind is what a grant gives: a slot, or, from grantClosed on, no slot: the error Acquire
// returns, or, for grantLeft, nothing to pass on.
type grantKind uint32

const (
	grantLent    grantKind = iota // slot i, lent under the word w
	grantMake                     // slot i, reserved: the caller opens its resource
	grantClosed                   // the pool closed: ErrClosed
	grantRefused                  // the ward refused: ErrRefused
	grantLater                    // the ward refused for w nanoseconds: ErrRefused carrying that wait
	grantLeft                     // leave's, to a caller that gave up owed no grant: nothing to pass on
)

// refusal is the grant of a caller the ward refused, with the wait Later gives (0 for none).
func refusal(wait time.Duration) grant {
	if wait > 0 {
		return grant{w: uint64(wait), kind: grantLater}
	}
	return grant{kind: grantRefused}
}

// refused reports whether g refuses: Acquire returns g.err().
func (g grant) refused() bool { return g.kind >= grantClosed }

// err is the error Acquire returns for g, a refusal.
func (g grant) err() error {
	switch g.kind {
	case grantClosed:
		return ErrClosed
	case grantLater:
		return contract.Wait(ErrRefused, time.Duration(g.w))
	}
	return ErrRefused // grantRefused (grantLeft never reaches Acquire's caller)
}

// acquireFirst is Acquire for a caller that found no caller waiting unserved: it counts itself
// as the first (first), and receives its grant unless first served it.
func (p *Pool[T]) acquireFirst(ctx context.Context, done <-chan struct{}) (Loan[T], error) {
	g, k := p.first()
	if k == firstClosed {
		return Loan[T]{}, ErrClosed
	}
	served := true
	if k == firstCounted {
		g, served = p.b.receive(done)
	}
	return p.use(ctx, g, served)
}

// use is what Acquire answers with the grant g a caller received (served), or passed on after it
// gave up (not served).
func (p *Pool[T]) use(ctx context.Context, g grant, served bool) (Loan[T], error) {
	switch {
	case !served:
		p.abandon(g)
		p.b.counts.Add(tally.Abandoned)
		return Loan[T]{}, ctx.Err()
	case g.refused():
		if g.kind != grantClosed {
			p.b.counts.Add(tally.Refused)
		}
		return Loan[T]{}, g.err()
	case g.kind == grantMake:
		return p.make(ctx, g.i)
	}
	return p.loan(g.i, g.w), nil
}

// What first did.
const (
	firstCounted = iota // counted among the waiters: receive
	firstServed         // received its grant before it closed stale resources
	firstClosed         // the pool is closed
)

// first counts the caller among the waiters as the first, under the lock, and serves what is idle,
// or room to make, to the callers counted (this one among them); every change after is served by
// whoever makes it.
//
// Serving may find idle resources past their age, to close outside the lock; closing them takes
// the lock again afterwards. A caller counted among the waiters and not yet served never takes
// the lock before it receives, though: a send made under the lock to a full buffer may wait for
// it. So the caller first leaves the count (see leave): it uncounts itself, or takes the grant
// owed to it; then it closes them, and with a grant it is served, else it counts itself again.
func (p *Pool[T]) first() (grant, int) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return grant{}, firstClosed
		}
		p.b.h.gate.Add(1)
		if p.b.h.left.Load() != 0 { // this count may be the one a caller waiting to leave can take
			p.b.wake()
		}
		out := p.serve(unread, nil)
		p.mu.Unlock()
		if len(out) == 0 {
			return grant{}, firstCounted
		}
		g := p.b.leave()
		p.closeAll(out)
		if g.kind != grantLeft {
			return g, firstServed
		}
		if p.b.join() {
			return grant{}, firstCounted
		}
	}
}

// receive is the wait of a caller counted among the waiters: a plain receive when its context
// never ends (done nil), else await.
func (b *base) receive(done <-chan struct{}) (grant, bool) {
	if done == nil {
		return <-b.hand, true
	}
	return b.await(done)
}

// await receives the grant of a caller counted among the waiters, or, when done ends first,
// answers false with what the caller must pass on (see leave). Never inlined: its select's cases
// would take room in the frame of every caller that waits, a plain receive's included, and a
// waiter's stack is cold when it wakes.
//
//go:noinline
func (b *base) await(done <-chan struct{}) (grant, bool) {
	select {
	case g := <-b.hand:
		return g, true
	case <-done:
		return b.leave(), false
	}
}

// leave is the way out of a caller counted among the waiters that gives up: a grantLeft once it has
// uncounted itself, else a grant it receives, to pass on. It uncounts itself when it can claim;
// when it cannot, a grant is owed to every caller counted, this one among them, and is sent
// without waiting on anything but a receiver. Waiting for a grant alone is not enough, though: a
// caller counted after the claim failed may receive first and take the grant owed, and the one
// owed to that caller comes only when a resource is released or room is made, which may be never.
// So a leaver also waits to be woken by the next caller counted (the first, as the count was 0:
// see first), whose count then stands for this one, and claims again; it is counted among those
// waiting to leave before it first claims, and that caller counts itself before it looks for
// them, so one of the two sees the other. A leaver that
// uncounts itself wakes the next one while callers are still counted, so a wake-up lost to a full
// poke is passed on. It blocks on channels only, never spins: a testing/synctest bubble sees it
// durably blocked.
func (b *base) leave() grant {
	b.h.left.Add(1)
	for {
		if b.claim() {
			if b.h.left.Add(-1) != 0 && b.h.gate.Load()&^closedBit != 0 {
				b.wake()
			}
			return grant{kind: grantLeft}
		}
		select {
		case g := <-b.hand:
			b.h.left.Add(-1)
			return g
		case <-b.poke:
		}
	}
}

// abandon undoes g, served to a caller that gave up.
func (p *Pool[T]) abandon(g grant) {
	switch {
	case g.refused():
	case g.kind == grantMake:
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
			out, _ = p.keep(i, now, out)
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

// serve hands what the pool can to the callers waiting, in the order they wait, at now (or at
// the clock's reading when it first needs one, if now is unread). Under the lock; returns out
// with the slots to close appended.
func (p *Pool[T]) serve(now int64, out []uint32) []uint32 {
	for p.b.h.gate.Load() != 0 && !p.closed {
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
			if !p.b.claim() { // the waiters gave up meanwhile
				p.b.put(i) // still counted
				return out
			}
			loan, ok := p.g.lend(now)
			if !ok {
				p.b.put(i)
				p.refuseAll(refusal(0))
				return out
			}
			s.loan = loan
			w := s.lend()
			p.b.unreserve()
			p.b.hand <- grant{w: w, i: i}
			continue
		}
		if p.live >= p.b.lim.Size || !p.b.claim() {
			return out
		}
		if now == unread {
			now = p.b.clock()
		}
		kind, wait, loan := p.g.admit(now, p.roll())
		switch kind {
		case Later:
			p.refuseAll(refusal(wait))
			return out
		case Shed:
			p.refuseAll(refusal(0))
			return out
		}
		i := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		s := &p.b.slots[i]
		s.loan = loan
		s.word.Store(s.word.Load()&^stMask | stMaking)
		p.live++
		p.b.hand <- grant{i: i, kind: grantMake}
	}
	return out
}

// refuseAll refuses the caller a grant was claimed for and every caller waiting with g, a
// refusal. Under the lock.
func (p *Pool[T]) refuseAll(g grant) {
	for n := p.b.claimAll() + 1; n > 0; n-- {
		p.b.hand <- g
	}
}

// keep places slot i, taken back from its loan at now and not idle: with the first waiter, in
// the idle set if Limits.Idle leaves room, or out to be closed, and reports whether it handed it
// on. Under the lock. The loan's word is the one the slot's taking back moved it to (still
// marked lent, a generation never lent before), taken as it is: handing a slot on writes no word.
func (p *Pool[T]) keep(i uint32, now int64, out []uint32) (_ []uint32, handed bool) {
	s := &p.b.slots[i]
	if p.closed || past(now, s.born, p.b.lim.Life) {
		return append(out, p.retire(i)), false
	}
	if p.b.claim() {
		loan, ok := p.g.lend(now)
		if ok {
			s.loan = loan
			p.b.hand <- grant{w: s.word.Load(), i: i}
			return out, true
		}
		p.refuseAll(refusal(0))
	}
	if p.b.reserve() {
		p.b.put(i)
		return out, false
	}
	return append(out, p.retire(i)), false
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
	out, handed := p.keep(i, now, nil)
	if !handed {
		// Handed on, it changed neither the idle set nor the room to make, which every change
		// serves as it happens: nothing more to serve.
		out = p.serve(unread, out) // what it changed, at the clock's reading
	}
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
	n := p.b.h.gate.Swap(closedBit) // every caller waiting is owed ErrClosed, and no one joins
	out := p.drainIfClosed(nil)
	p.mu.Unlock()
	for ; n > 0; n-- { // outside the lock: a caller counted may not have begun to receive
		p.b.hand <- grant{kind: grantClosed}
	}
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
	st := Stats{Live: p.live, Waiting: int(p.b.h.gate.Load() &^ closedBit), Opened: p.opened, Failed: p.failed, Closed: p.retired}
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
