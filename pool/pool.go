package pool

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
)

// ErrRefused is the refusal of [Pool.Acquire] when the ward says Shed or Later; it matches
// ward.ErrRefused too. A Later refusal carries its wait (ward.RetryAfter reads it).
var ErrRefused = contract.Refusal("pool: refused by the ward")

// ErrClosed is returned by Acquire on a closed pool, and to the callers waiting when it closes.
var ErrClosed = errors.New("pool: closed")

var errHeld = errors.New("pool: open returned a resource the pool already holds")

// Option configures a [Pool].
type Option func(*config) error

type config struct {
	clock func() int64
	roll  func() float64
	ward  Ward
	every time.Duration
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
	return func(c *config) error {
		if d <= 0 {
			return contract.Field(ErrInvalid, "WithEvictEvery", d, "> 0")
		}
		c.every = d
		return nil
	}
}

// A slot's state, in the low bits of its word; the rest is its generation, moved on at every
// retirement so that a late Release of a resource that has gone cannot claim its successor.
const (
	stFree uint64 = iota
	stIdle
	stLent
	stMaking
	stMask = 3
)

// slot holds one resource. Whoever moved the slot's word last owns its plain fields: the maker,
// then the borrower, then the idle stack or a P's cache (a push publishes them, a pop acquires
// them). A cache line of padding keeps two slots lent on two Ps off each other's lines.
type slot[T any] struct {
	word   atomic.Uint64 // generation<<2 | state
	next   atomic.Uint32 // on the idle stack: the slot below, plus one (0: the bottom)
	item   T
	born   int64
	rested int64
	loan   int
	_      [stripe.CacheLine]byte
}

// ref is where the index finds a resource.
type ref struct{ i, gen uint32 }

// closedBit marks the gate closed; the rest of the gate counts the callers waiting.
const closedBit = 1 << 62

// hot holds the words every Acquire and Release read, each on cache lines of its own.
type hot struct {
	_      [stripe.CacheLine]byte
	top    atomic.Uint64 // the idle stack: version<<32 | top slot plus one (0: empty)
	_      [stripe.CacheLine - unsafe.Sizeof(atomic.Uint64{})]byte
	gate   atomic.Int64 // callers waiting, plus closedBit once closed: 0 is the fast path's go-ahead
	idleN  atomic.Int64 // idle resources, counted only when Limits.Idle < Size
	spread atomic.Bool  // the Ps' caches are in use: set at the first collision on top
	_      [stripe.CacheLine - 2*unsafe.Sizeof(atomic.Int64{}) - unsafe.Sizeof(atomic.Bool{})]byte
	seen   atomic.Int64 // the coarse clock's reading
	awake  atomic.Bool  // the coarse clock's timer is running
	used   atomic.Bool  // seen was read since the timer's last tick
	_      [stripe.CacheLine - unsafe.Sizeof(atomic.Int64{}) - 2*unsafe.Sizeof(atomic.Bool{})]byte
}

// Pool is a concurrent pool of resources of type T, made by an open function and closed by a
// close function, held to [Limits], with an optional [Ward] in front of the backend.
//
// Acquire takes the most recently released idle resource, opens one when there is room, or waits
// its turn; Release gives one back and Destroy says one broke. Acquiring an idle resource and
// releasing it take no lock and allocate nothing. A Pool is safe for use by any number of
// goroutines; it must not be copied after first use. Close it to close what it holds and stop its
// evictor.
//
// Driven from one goroutine with an injected clock and draw, a Pool gives exactly the answers of
// a [Core] with the same limits and ward.
type Pool[T comparable] struct {
	_     stripe.NoCopy
	h     hot
	slots []slot[T]
	index atomic.Pointer[map[T]ref]
	open  func(context.Context) (T, error)
	close func(T)
	lim   Limits
	clock func() int64
	roll  func() float64
	timed bool // Keep or Life set: ages are read
	lends bool // the ward has a shedder: every lend takes the lock
	cache stripe.Table
	// The coarse clock (the default clock, when ages are read): gran between its timer's ticks,
	// the timer nil when every decision reads the clock.
	gran  time.Duration
	timer *time.Timer

	mu      sync.Mutex
	g       guard
	live    int
	free    []uint32
	head    *waiter
	tail    *waiter
	closed  bool
	opened  int64
	failed  int64
	retired int64
	stop    chan struct{}
	done    chan struct{}
}

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
// open is called on the goroutine of the Acquire that needs a resource, with that call's context.
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
	cfg := config{roll: draw.Float64}
	if err := contract.Apply(ErrInvalid, &cfg, opts); err != nil {
		return nil, err
	}
	injected := cfg.clock != nil
	if !injected {
		cfg.clock = clock.Now
	}
	p := &Pool[T]{
		slots: make([]slot[T], limits.Size),
		open:  open,
		close: close,
		lim:   limits,
		clock: cfg.clock,
		roll:  draw.Func(cfg.roll),
		timed: limits.Keep > 0 || limits.Life > 0,
		lends: cfg.ward.Shedder != nil,
		g:     guard{w: cfg.ward},
		free:  make([]uint32, limits.Size),
	}
	for i := range p.free {
		p.free[i] = uint32(limits.Size - 1 - i) // slot 0 first
	}
	p.cache.Init(1)
	if p.gran = coarseGran(limits); p.timed && !injected && p.gran > 0 {
		p.timer = time.AfterFunc(time.Hour, p.tick)
		p.timer.Stop()
	}
	p.index.Store(&map[T]ref{})
	if cfg.every > 0 {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.evictor(cfg.every)
	}
	return p, nil
}

// Now returns the instant the pool decides at: nanoseconds of its clock.
func (p *Pool[T]) Now() int64 { return p.clock() }

// capped reports whether Limits.Idle can bind (it cannot when it is Size).
func (p *Pool[T]) capped() bool { return p.lim.Idle < p.lim.Size }

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
func (p *Pool[T]) now() int64 {
	if p.timer == nil {
		return p.clock()
	}
	if p.h.awake.Load() {
		if !p.h.used.Load() {
			p.h.used.Store(true)
		}
		return p.h.seen.Load()
	}
	now := p.clock()
	p.h.seen.Store(now)
	if p.h.awake.CompareAndSwap(false, true) {
		p.h.used.Store(false)
		p.timer.Reset(p.gran)
	}
	return now
}

// tick refreshes the coarse clock, and goes on ticking only if it was read since the last tick.
func (p *Pool[T]) tick() {
	p.h.seen.Store(p.clock())
	if p.h.used.Swap(false) && p.h.gate.Load()&closedBit == 0 {
		p.timer.Reset(p.gran)
		return
	}
	p.h.awake.Store(false)
}

// collided records that two goroutines met on the idle stack: from then on the Ps' caches serve.
func (p *Pool[T]) collided() {
	if !p.h.spread.Load() {
		p.h.spread.Store(true)
	}
}

// push puts slot i, idle, on top of the idle stack.
func (p *Pool[T]) push(i uint32) {
	s := &p.slots[i]
	for {
		old := p.h.top.Load()
		s.next.Store(uint32(old))
		if p.h.top.CompareAndSwap(old, (old>>32+1)<<32|uint64(i+1)) {
			return
		}
		p.collided()
	}
}

// pop takes the top slot off the idle stack.
func (p *Pool[T]) pop() (uint32, bool) {
	for {
		old := p.h.top.Load()
		top := uint32(old)
		if top == 0 {
			return 0, false
		}
		next := p.slots[top-1].next.Load()
		if p.h.top.CompareAndSwap(old, (old>>32+1)<<32|uint64(next)) {
			return top - 1, true
		}
		p.collided()
	}
}

// row is the caller's P's cache word: slot plus one, 0 when empty. It is read and written only
// with atomics, so a goroutine that moves to another P after finding it (or, in the build without
// a real P index, shares it with another) stays correct.
func (p *Pool[T]) row() *int64 {
	r := p.cache.Current()
	if w := r.Row(stripe.PinRow(r)); w != nil {
		stripe.Unpin()
		return (*int64)(w)
	}
	stripe.Unpin()
	w := p.cache.Pin() // GOMAXPROCS grew: the table grows
	stripe.Unpin()
	return (*int64)(w)
}

// take takes the most recently released idle slot: see the package doc's "Which idle resource".
func (p *Pool[T]) take() (uint32, bool) {
	i, ok := p.takeAny()
	if ok && p.capped() {
		p.h.idleN.Add(-1)
	}
	return i, ok
}

func (p *Pool[T]) takeAny() (uint32, bool) {
	if !p.h.spread.Load() {
		return p.pop()
	}
	if v := atomic.SwapInt64(p.row(), 0); v != 0 {
		return uint32(v - 1), true
	}
	if i, ok := p.pop(); ok {
		return i, true
	}
	for w := range p.cache.All() {
		if v := atomic.SwapInt64((*int64)(w), 0); v != 0 {
			return uint32(v - 1), true
		}
	}
	return 0, false
}

// put makes slot i idle: into the caller's P's cache when the caches serve and it is empty, else
// on the idle stack. Counted by the caller.
func (p *Pool[T]) put(i uint32) {
	if p.h.spread.Load() && atomic.CompareAndSwapInt64(p.row(), 0, int64(i)+1) {
		return
	}
	p.push(i)
}

// Acquire returns a resource: the most recently released idle one, a new one opened on this
// goroutine when there is room, or the next one released, in the order callers came. It returns
// an error matching [ErrRefused] when the ward refuses (Later's carries the wait), ctx's error when
// ctx ends first, [ErrClosed] when the pool is closed, or open's error.
func (p *Pool[T]) Acquire(ctx context.Context) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	if !p.lends {
		for p.h.gate.Load() == 0 {
			i, ok := p.take()
			if !ok {
				break
			}
			s := &p.slots[i]
			if p.timed && p.lim.stale(p.now(), s.born, s.rested) {
				p.retireNow(i)
				continue
			}
			s.word.Store(s.word.Load()&^stMask | stLent)
			return s.item, nil
		}
	}
	return p.acquireSlow(ctx)
}

// grant is what a waiter is given: a slot (lent, or reserved to make) or a refusal.
type grant struct {
	i    uint32
	make bool
	err  error
}

type waiter struct {
	ch         chan grant
	prev, next *waiter
	queued     bool
}

func (p *Pool[T]) enqueue(w *waiter) {
	w.prev, w.next, w.queued = p.tail, nil, true
	if p.tail == nil {
		p.head = w
	} else {
		p.tail.next = w
	}
	p.tail = w
	p.h.gate.Add(1)
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
	w.prev, w.next, w.queued = nil, nil, false
	p.h.gate.Add(-1)
}

// give hands g to the first waiter.
func (p *Pool[T]) give(g grant) {
	w := p.head
	p.dequeue(w)
	w.ch <- g
}

func (p *Pool[T]) acquireSlow(ctx context.Context) (T, error) {
	var zero T
	// A waiter of its own (one small allocation on the slow path): a waiter kept for reuse across
	// calls would carry its channel from one testing/synctest bubble into another.
	w := &waiter{ch: make(chan grant, 1)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return zero, ErrClosed
	}
	p.enqueue(w)
	out := p.serve(p.clock(), nil)
	p.mu.Unlock()
	p.closeAll(out)
	var g grant
	select {
	case g = <-w.ch:
	case <-ctx.Done():
		p.mu.Lock()
		if w.queued {
			p.dequeue(w)
			p.mu.Unlock()
			return zero, ctx.Err()
		}
		p.mu.Unlock()
		g = <-w.ch // served while giving up: undo it
		if g.err == nil {
			p.undo(g)
		}
		return zero, ctx.Err()
	}
	if g.err != nil {
		return zero, g.err
	}
	if !g.make {
		return p.slots[g.i].item, nil
	}
	return p.make(ctx, g.i)
}

// undo gives back a grant its waiter no longer wants.
func (p *Pool[T]) undo(g grant) {
	if !g.make {
		p.Release(p.slots[g.i].item)
		return
	}
	p.mu.Lock()
	p.g.back(p.slots[g.i].loan, p.clock(), false)
	p.unreserve(g.i)
	out := p.serve(p.clock(), nil)
	p.mu.Unlock()
	p.closeAll(out)
}

// unreserve frees a slot reserved to make. Under the lock.
// freeNext moves the slot to its next generation, free: the generation counts up past the two
// state bits, and stFree is the state 0.
func (s *slot[T]) freeNext() { s.word.Store((s.word.Load()>>2 + 1) << 2) }

func (p *Pool[T]) unreserve(i uint32) {
	s := &p.slots[i]
	s.freeNext()
	s.loan = 0
	p.free = append(p.free, i)
	p.live--
}

// make opens a resource into slot i, reserved for it.
func (p *Pool[T]) make(ctx context.Context, i uint32) (T, error) {
	item, err := p.open(ctx)
	now := p.clock()
	s := &p.slots[i]
	p.mu.Lock()
	if err != nil {
		p.failed++
		if contract.Classify(ctx, err, nil, nil, contract.Ignore, contract.Fail) == contract.Ignore {
			p.g.back(s.loan, now, false)
		} else {
			p.g.unmade(now, p.roll())
			p.g.back(s.loan, now, false)
		}
		p.unreserve(i)
		out := p.serve(now, nil)
		p.mu.Unlock()
		p.closeAll(out)
		var zero T
		return zero, err
	}
	p.opened++
	p.g.made(now)
	if _, known := (*p.index.Load())[item]; known || p.closed {
		// open handed back a resource the pool already holds, or the pool closed meanwhile
		p.g.back(s.loan, now, true)
		var zero T
		if known {
			p.unreserve(i)
			out := p.serve(now, nil)
			p.mu.Unlock()
			p.closeAll(out)
			return zero, errHeld
		}
		s.item = item // closed in its slot, which stays taken until it is
		s.freeNext()
		p.mu.Unlock()
		p.closeAll([]uint32{i})
		return zero, ErrClosed
	}
	s.item, s.born = item, now
	m := maps.Clone(*p.index.Load())
	m[item] = ref{i, uint32(s.word.Load() >> 2)}
	p.index.Store(&m)
	s.word.Store(s.word.Load()&^stMask | stLent)
	p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		p.Release(item) // the caller gave up: the resource goes to the pool, not to waste
		var zero T
		return zero, err
	}
	return item, nil
}

// serve hands what the pool can to the callers waiting, first come first served, at now. Under
// the lock; returns out with the slots to close appended.
func (p *Pool[T]) serve(now int64, out []uint32) []uint32 {
	for p.head != nil {
		if i, ok := p.take(); ok {
			s := &p.slots[i]
			if p.timed && p.lim.stale(now, s.born, s.rested) {
				out = append(out, p.retire(i))
				continue
			}
			loan, ok := p.g.lend(now)
			if !ok {
				p.pushIdle(i)
				p.refuseAll(ErrRefused)
				return out
			}
			s.loan = loan
			s.word.Store(s.word.Load()&^stMask | stLent)
			p.give(grant{i: i})
			continue
		}
		if p.live >= p.lim.Size {
			return out
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
		s := &p.slots[i]
		s.loan = loan
		s.word.Store(s.word.Load()&^stMask | stMaking)
		p.live++
		p.give(grant{i: i, make: true})
	}
	return out
}

// pushIdle puts slot i back on the idle stack, counting it.
func (p *Pool[T]) pushIdle(i uint32) {
	if p.capped() {
		p.h.idleN.Add(1)
	}
	p.put(i)
}

func (p *Pool[T]) refuseAll(err error) {
	for p.head != nil {
		p.give(grant{err: err})
	}
}

// retire takes slot i's resource out of the pool and returns i for closeAll: the slot stays
// taken, and counted live, until its resource is closed, so that a new one is never opened
// beside one still closing. Under the lock.
func (p *Pool[T]) retire(i uint32) uint32 {
	s := &p.slots[i]
	m := maps.Clone(*p.index.Load())
	delete(m, s.item)
	p.index.Store(&m)
	s.freeNext()
	s.loan = 0
	return i
}

// retireNow retires slot i, serves the waiters, and closes what has to be closed.
func (p *Pool[T]) retireNow(i uint32) {
	p.mu.Lock()
	out := p.serve(p.clock(), []uint32{p.retire(i)})
	p.mu.Unlock()
	p.closeAll(out)
}

// closeAll closes the resources of retired slots, outside the lock, then frees the slots and
// serves the waiters with the room they leave (which may retire more).
func (p *Pool[T]) closeAll(out []uint32) {
	for len(out) > 0 {
		for _, i := range out {
			p.close(p.slots[i].item)
		}
		p.mu.Lock()
		var zero T
		for _, i := range out {
			p.slots[i].item = zero
			p.free = append(p.free, i)
			p.live--
			p.retired++
		}
		out = p.serve(p.clock(), out[:0])
		p.mu.Unlock()
	}
}

// claim finds a lent resource and marks it as coming back; false when the pool did not lend it.
func (p *Pool[T]) claim(item T) (uint32, bool) {
	r, ok := (*p.index.Load())[item]
	if !ok {
		return 0, false
	}
	gen := uint64(r.gen) << 2
	return r.i, p.slots[r.i].word.CompareAndSwap(gen|stLent, gen|stIdle)
}

// Release gives back a resource Acquire returned. It is kept idle unless Limits.Idle already sit
// idle, it is past Life, or the pool is closed; then it is closed. A resource the pool did not
// lend (never acquired, or released already) is ignored.
func (p *Pool[T]) Release(item T) {
	i, ok := p.claim(item)
	if !ok {
		return
	}
	s := &p.slots[i]
	if p.timed {
		s.rested = p.now()
	}
	if p.lends || p.h.gate.Load() != 0 || (p.lim.Life > 0 && past(s.rested, s.born, p.lim.Life)) {
		p.releaseSlow(i)
		return
	}
	if p.capped() && p.h.idleN.Add(1) > int64(p.lim.Idle) {
		p.h.idleN.Add(-1)
		p.releaseSlow(i)
		return
	}
	p.put(i)
	if p.h.gate.Load() != 0 { // a caller began to wait, or the pool closed, as it was put
		p.mu.Lock()
		out := p.serve(p.clock(), p.drainIfClosed(nil))
		p.mu.Unlock()
		p.closeAll(out)
	}
}

// releaseSlow takes back slot i under the lock: to the first waiter, the idle stack, or closing.
func (p *Pool[T]) releaseSlow(i uint32) {
	s := &p.slots[i]
	var out []uint32
	p.mu.Lock()
	now := p.clock()
	p.g.back(s.loan, now, true)
	s.loan = 0
	switch {
	case p.closed || (p.lim.Life > 0 && past(now, s.born, p.lim.Life)):
		out = append(out, p.retire(i))
	case p.head != nil || !p.capped() || p.h.idleN.Load() < int64(p.lim.Idle):
		s.rested = now
		p.pushIdle(i) // the first waiter takes it at once
	default:
		out = append(out, p.retire(i))
	}
	out = p.serve(now, out)
	p.mu.Unlock()
	p.closeAll(out)
}

// drainIfClosed retires everything idle if the pool is closed. Under the lock.
func (p *Pool[T]) drainIfClosed(out []uint32) []uint32 {
	if !p.closed {
		return out
	}
	for {
		i, ok := p.take()
		if !ok {
			return out
		}
		out = append(out, p.retire(i))
	}
}

// Destroy says a lent resource broke: it is closed and its room freed for a new one. A resource
// the pool did not lend is ignored.
func (p *Pool[T]) Destroy(item T) {
	i, ok := p.claim(item)
	if !ok {
		return
	}
	p.mu.Lock()
	now := p.clock()
	s := &p.slots[i]
	p.g.back(s.loan, now, false)
	out := p.serve(now, []uint32{p.retire(i)})
	p.mu.Unlock()
	p.closeAll(out)
}

// Evict closes every idle resource that has sat longer than Keep or lived longer than Life, and
// returns how many it closed. [WithEvictEvery] calls it on a timer; Acquire never lends a stale
// resource either way.
func (p *Pool[T]) Evict() int {
	p.mu.Lock()
	now := p.clock()
	var keep, out []uint32
	for {
		i, ok := p.take()
		if !ok {
			break
		}
		s := &p.slots[i]
		if p.lim.stale(now, s.born, s.rested) {
			out = append(out, p.retire(i))
		} else {
			keep = append(keep, i)
		}
	}
	for k := len(keep) - 1; k >= 0; k-- { // back on the stack, in the order they were taken
		if p.capped() {
			p.h.idleN.Add(1)
		}
		p.push(keep[k])
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
// [ErrClosed], and stops the evictor; a resource released after Close is closed. Closing again
// does nothing.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.h.gate.Add(closedBit)
	out := p.drainIfClosed(nil)
	p.refuseAll(ErrClosed)
	p.mu.Unlock()
	p.closeAll(out)
	if p.timer != nil {
		p.timer.Stop() // a tick already under way sees closedBit and stops
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
	return p.g.refusal(p.clock())
}

// Stats returns a snapshot of the pool.
func (p *Pool[T]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{Live: p.live, Waiting: int(p.h.gate.Load() &^ closedBit), Opened: p.opened, Failed: p.failed, Closed: p.retired}
	for i := range p.slots {
		switch p.slots[i].word.Load() & stMask {
		case stIdle:
			st.Idle++
		case stLent:
			st.Lent++
		case stMaking:
			st.Making++
		}
	}
	return st
}
