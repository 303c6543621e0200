package adaptive

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// ErrQueueFull is the refusal of a [Queue] whose waiting line is full: allocation-free, matched
// with errors.Is, and matching ward.ErrRefused too. It carries no wait.
var ErrQueueFull = contract.Refusal("adaptive: queue full")

// Order is which waiter a [Queue] serves first when a slot frees.
type Order uint8

const (
	// FIFO serves the caller that has waited longest: fair, and the right order when callers wait
	// patiently.
	FIFO Order = iota
	// LIFO serves the caller that arrived last: under overload the oldest waiters are those whose
	// own callers are about to give up, so serving the freshest keeps useful work flowing (the
	// order Netflix's LifoBlockingLimiter offers).
	LIFO
)

// Queue lets callers wait for a [Limiter]'s slot: [Queue.Acquire] admits at once when the
// limiter does, and otherwise waits in a bounded line for at most MaxWait, served FIFO or LIFO as
// chosen at construction. [NewQueue] attaches the Queue to its Limiter for the Limiter's life, and
// every slot the Limiter frees is handed to a waiter directly, whoever frees it: a [Slot], a
// [Lease] taken from the Limiter itself, a [PartitionLease], a [PermitAdapter]'s Release, or a
// window that raises the limit. No wake-up is lost (a slot freed while a waiter registers is seen
// by one or the other), and a waiter whose context ends or whose wait runs out leaves the line and
// leaves no goroutine behind.
//
// Queueing time is not response time: a waiter's call is timed from the moment it is handed its
// slot, so time spent waiting never reaches the rule's samples, and a timed settle reads the clock
// before it hands its slot on, so the hand-off is not in the settled call's time either.
//
// The path that does not wait is the limiter's own: [Queue.TryAcquire] is [Limiter.Acquire]. Every
// settle on a Limiter loads one word that says, among other things, whether a Queue is attached;
// with a Queue attached it loads the Queue's count of waiters too, and only a settle that finds
// waiters takes the Queue's mutex.
// Waiting takes a mutex and allocates a waiter and a timer. A Queue is safe for concurrent use and
// must not be copied.
//
// # Edge cases
//
//   - Several Queues on one Limiter: a freed slot is offered to each line in turn, the Queue made
//     last first; a waiter of one line may take a slot while an older waiter of another waits.
//   - A full line refuses the newcomer with [ErrQueueFull], in both orders.
//   - A waiter whose context ends gets ctx.Err(); one whose MaxWait runs out gets
//     [ErrLimitExceeded]. A slot handed to a waiter that gave up at the same moment is passed on.
//   - Leaving the line costs a scan of it: O(Size).
type Queue struct {
	_       stripe.NoCopy
	l       *Limiter
	next    *Queue       // the Queue attached to l before this one; set before this one is
	waiting atomic.Int64 // waiters in line; read by every settle on l

	mu    sync.Mutex
	line  []*waiter // oldest first
	size  int
	wait  time.Duration
	order Order

	counts tally.Table // per P: the Queue's ward.Counts
}

type waiter struct{ ch chan Lease }

// QueueOption configures a [Queue]; [NewQueue] applies the options in order.
type QueueOption func(*queueConfig) error

type queueConfig struct {
	size  int
	wait  time.Duration
	order Order
}

// DefaultQueueSize and DefaultMaxWait are a Queue's defaults: at most 100 waiters, for at most
// 100 ms each (failsafe-go's queueing has the same two knobs and no default; these are ward's).
const (
	DefaultQueueSize = 100
	DefaultMaxWait   = 100 * time.Millisecond
)

// WithQueueSize bounds the waiting line: n >= 1.
func WithQueueSize(n int) QueueOption {
	return func(c *queueConfig) error {
		if n < 1 {
			return contract.Field(ErrInvalid, "WithQueueSize", n, ">= 1")
		}
		c.size = n
		return nil
	}
}

// WithMaxWait bounds how long a caller waits for a slot: d > 0.
func WithMaxWait(d time.Duration) QueueOption {
	return func(c *queueConfig) error {
		if d <= 0 {
			return contract.Field(ErrInvalid, "WithMaxWait", d, "> 0")
		}
		c.wait = d
		return nil
	}
}

// WithOrder chooses which waiter is served first: [FIFO] (the default) or [LIFO].
func WithOrder(o Order) QueueOption {
	return func(c *queueConfig) error {
		if o != FIFO && o != LIFO {
			return contract.Field(ErrInvalid, "WithOrder", o, "FIFO or LIFO")
		}
		c.order = o
		return nil
	}
}

// NewQueue returns a waiting line in front of l.
func NewQueue(l *Limiter, opts ...QueueOption) (*Queue, error) {
	if l == nil {
		return nil, contract.Field(ErrInvalid, "limiter", "nil", "a *Limiter")
	}
	c := queueConfig{size: DefaultQueueSize, wait: DefaultMaxWait, order: FIFO}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return nil, err
	}
	q := &Queue{l: l, size: c.size, wait: c.wait, order: c.order}
	q.counts.Init()
	for {
		q.next = (*Queue)(atomic.LoadPointer(&l.queues))
		if atomic.CompareAndSwapPointer(&l.queues, unsafe.Pointer(q.next), unsafe.Pointer(q)) {
			for !l.tune(true) { // closed: every release wakes the waiters
			}
			return q, nil
		}
	}
}

// freed is called after l gave a slot back (in gave, which every settle calls while a Queue is
// attached) and after a window that may have raised the limit: one load when no Queue is
// attached, and for each attached Queue one load of its waiters.
func (l *Limiter) freed() {
	if q := (*Queue)(atomic.LoadPointer(&l.queues)); q != nil {
		q.wake()
	}
}

// wake hands free slots to the waiters of q and of the Queues attached before it. Kept out of
// line so that freed inlines to one load and a branch.
//
//go:noinline
func (q *Queue) wake() {
	for ; q != nil; q = q.next {
		if q.waiting.Load() > 0 {
			q.serve()
		}
	}
}

// Now returns the instant the limiter's clock reads (see [Limiter.Now]).
func (q *Queue) Now() int64 { return q.l.Now() }

// Waiting returns how many callers wait for a slot.
func (q *Queue) Waiting() int { return int(q.waiting.Load()) }

// Slot is a call a [Queue] admitted. Settle it once with Pass, Fail or Ignore, as a [Lease]
// (which it settles, handing the freed slot to a waiter as every settle does). Settling the same
// variable twice is a no-op; the zero Slot is settled already.
type Slot struct {
	lease Lease
	q     *Queue // counts the settle; nil once settled
}

// Pass settles a call that succeeded: its response time (from the moment it was admitted) is a
// sample.
func (s *Slot) Pass() { s.count(tally.Passed); s.lease.Pass() }

// Fail settles a call that timed out or met an overload answer: a sample marked dropped.
func (s *Slot) Fail() { s.count(tally.Failed); s.lease.Fail() }

// Ignore frees the slot without a sample.
func (s *Slot) Ignore() { s.count(tally.Ignored); s.lease.Ignore() }

// count counts the settle of an unsettled slot as o in its Queue's counts.
func (s *Slot) count(o int) {
	if q := s.q; q != nil {
		s.q = nil
		if s.lease.lim != nil {
			q.counts.Add(o)
		}
	}
}

// admitted is the Slot of a lease the Queue admitted, counted.
func (q *Queue) admitted(lease Lease) Slot {
	q.counts.Add(tally.Admitted)
	return Slot{lease, q}
}

// TryAcquire admits a call if the limiter does, never waiting: [Limiter.Acquire].
func (q *Queue) TryAcquire() (Slot, bool) {
	lease, ok := q.l.Acquire()
	if !ok {
		q.counts.Add(tally.Refused)
		return Slot{}, false
	}
	return q.admitted(lease), true
}

// Acquire admits a call at once if the limiter does; otherwise it waits in line until a slot is
// handed to it, its ctx ends (ctx.Err()), or MaxWait runs out ([ErrLimitExceeded]). A full line
// refuses at once with [ErrQueueFull]. A ctx already done returns its error (context.Canceled or
// context.DeadlineExceeded) at once, without taking a slot that is free. Only the waiting path
// allocates.
func (q *Queue) Acquire(ctx context.Context) (Slot, error) {
	if err := contract.Dead(ctx); err != nil {
		return Slot{}, err
	}
	if lease, ok := q.l.Acquire(); ok {
		return q.admitted(lease), nil
	}
	q.mu.Lock()
	if len(q.line) >= q.size {
		q.mu.Unlock()
		q.counts.Add(tally.Refused)
		return Slot{}, ErrQueueFull
	}
	// Registered before trying again, under the lock: a slot freed before the count rose is found
	// by this try; after one is freed its settle loads the count, so one freed after the count
	// rose is handed over by serve, which waits for this lock.
	q.waiting.Add(1)
	if lease, ok := q.l.Acquire(); ok {
		q.waiting.Add(-1)
		q.mu.Unlock()
		return q.admitted(lease), nil
	}
	w := &waiter{ch: make(chan Lease, 1)}
	q.line = append(q.line, w)
	q.mu.Unlock()

	timer := time.NewTimer(q.wait)
	defer timer.Stop()
	var err error
	select {
	case lease := <-w.ch:
		return q.admitted(lease), nil
	case <-ctx.Done():
		err = ctx.Err()
		q.counts.Add(tally.Abandoned)
	case <-timer.C:
		err = ErrLimitExceeded
		q.counts.Add(tally.Refused)
	}
	if !q.leave(w) {
		// Handed a slot as it gave up: take it and pass it on.
		lease := <-w.ch
		lease.Ignore()
	}
	return Slot{}, err
}

// leave takes w out of the line; false if it was served already.
func (q *Queue) leave(w *waiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.line {
		if x == w {
			copy(q.line[i:], q.line[i+1:])
			q.line[len(q.line)-1] = nil
			q.line = q.line[:len(q.line)-1]
			q.waiting.Add(-1)
			return true
		}
	}
	return false
}

// serve hands free slots to waiters, in the queue's order, while the limiter admits.
func (q *Queue) serve() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.line) > 0 {
		lease, ok := q.l.Acquire()
		if !ok {
			return
		}
		var w *waiter
		if q.order == LIFO {
			w = q.line[len(q.line)-1]
			q.line[len(q.line)-1] = nil
			q.line = q.line[:len(q.line)-1]
		} else {
			w = q.line[0]
			q.line[0] = nil
			q.line = q.line[1:]
		}
		q.waiting.Add(-1)
		w.ch <- lease // buffered: never blocks
	}
}

// Do runs fn under the limit, waiting for a slot as [Queue.Acquire] does; a refusal or the end of
// ctx, before or while waiting, returns that error without calling fn. fn's error settles the
// slot as [Limiter.Do] settles its lease (ward's one classification, with the limiter's
// WithOwnError and WithFailure); a panicking fn settles as a Fail and the panic continues. Do
// returns fn's error unchanged.
func (q *Queue) Do(ctx context.Context, fn func(context.Context) error) error {
	s, err := q.Acquire(ctx)
	if err != nil {
		return err
	}
	defer s.Fail() // a no-op once settled: only a panicking fn gets here unsettled
	err = fn(ctx)
	contract.Settle(contract.Classify(ctx, err, q.l.own, q.l.fail, ownAs, otherAs), s.Pass, s.Fail, s.Ignore)
	return err
}
