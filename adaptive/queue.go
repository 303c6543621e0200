package adaptive

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
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
// chosen at construction. A slot freed by a [Slot] settle is handed to a waiter directly: no
// wake-up is lost (a slot freed while a waiter registers is seen by one or the other), and a
// waiter whose context ends or whose wait runs out leaves the line and leaves no goroutine behind.
//
// Queueing time is not response time: a waiter's call is timed from the moment it is handed its
// slot, so time spent waiting never reaches the rule's samples.
//
// The path that does not wait is the limiter's own: [Queue.TryAcquire] is [Limiter.Acquire], and
// a Slot's settle adds one atomic load (are there waiters?) to the Lease's. Waiting takes a mutex
// and allocates a waiter and a timer. A Queue is safe for concurrent use and must not be copied.
//
// # Edge cases
//
//   - Take every call through the Queue: a slot freed by a Lease taken from the Limiter directly
//     wakes no waiter (the waiter is served by the next Slot settle, or refused at MaxWait).
//   - A full line refuses the newcomer with [ErrQueueFull], in both orders.
//   - A waiter whose context ends gets ctx.Err(); one whose MaxWait runs out gets
//     [ErrLimitExceeded]. A slot handed to a waiter that gave up at the same moment is passed on.
//   - Leaving the line costs a scan of it: O(Size).
type Queue struct {
	_       stripe.NoCopy
	l       *Limiter
	waiting atomic.Int64 // waiters in line; read by every Slot settle

	mu    sync.Mutex
	line  []*waiter // oldest first
	size  int
	wait  time.Duration
	order Order
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
	return &Queue{l: l, size: c.size, wait: c.wait, order: c.order}, nil
}

// Now returns the instant the limiter's clock reads (see [Limiter.Now]).
func (q *Queue) Now() int64 { return q.l.Now() }

// Waiting returns how many callers wait for a slot.
func (q *Queue) Waiting() int { return int(q.waiting.Load()) }

// Slot is a call a [Queue] admitted. Settle it once with Pass, Fail or Ignore, as a [Lease]
// (which it settles); settling it also hands the freed slot to a waiter. Settling the same
// variable twice is a no-op; the zero Slot is settled already.
type Slot struct {
	lease Lease
	q     *Queue
}

// Pass settles a call that succeeded: its response time (from the moment it was admitted) is a
// sample.
func (s *Slot) Pass() { s.lease.Pass(); s.wake() }

// Fail settles a call that timed out or met an overload answer: a sample marked dropped.
func (s *Slot) Fail() { s.lease.Fail(); s.wake() }

// Ignore frees the slot without a sample.
func (s *Slot) Ignore() { s.lease.Ignore(); s.wake() }

func (s *Slot) wake() {
	if q := s.q; q != nil {
		s.q = nil
		if q.waiting.Load() > 0 {
			q.serve()
		}
	}
}

// TryAcquire admits a call if the limiter does, never waiting: [Limiter.Acquire].
func (q *Queue) TryAcquire() (Slot, bool) {
	lease, ok := q.l.Acquire()
	if !ok {
		return Slot{}, false
	}
	return Slot{lease, q}, true
}

// Acquire admits a call at once if the limiter does; otherwise it waits in line until a slot is
// handed to it, its ctx ends (ctx.Err()), or MaxWait runs out ([ErrLimitExceeded]). A full line
// refuses at once with [ErrQueueFull]. Only the waiting path allocates.
func (q *Queue) Acquire(ctx context.Context) (Slot, error) {
	if s, ok := q.TryAcquire(); ok {
		return s, nil
	}
	if err := ctx.Err(); err != nil {
		return Slot{}, err
	}
	q.mu.Lock()
	if len(q.line) >= q.size {
		q.mu.Unlock()
		return Slot{}, ErrQueueFull
	}
	// Registered before trying again, under the lock: a slot freed before the count rose is found
	// by this try; one freed after is handed over by serve.
	q.waiting.Add(1)
	if lease, ok := q.l.Acquire(); ok {
		q.waiting.Add(-1)
		q.mu.Unlock()
		return Slot{lease, q}, nil
	}
	w := &waiter{ch: make(chan Lease, 1)}
	q.line = append(q.line, w)
	q.mu.Unlock()

	timer := time.NewTimer(q.wait)
	defer timer.Stop()
	var err error
	select {
	case lease := <-w.ch:
		return Slot{lease, q}, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = ErrLimitExceeded
	}
	if !q.leave(w) {
		// Handed a slot as it gave up: take it and pass it on.
		s := Slot{<-w.ch, q}
		s.Ignore()
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
// ctx while waiting returns that error without calling fn. fn's error settles the slot as
// [Limiter.Do] settles its lease (ward's one classification, with the limiter's WithOwnError and
// WithFailure); a panicking fn settles as a Fail and the panic continues. Do returns fn's error
// unchanged.
func (q *Queue) Do(ctx context.Context, fn func(context.Context) error) error {
	s, err := q.Acquire(ctx)
	if err != nil {
		return err
	}
	defer s.Fail() // a no-op once settled: only a panicking fn gets here unsettled
	err = fn(ctx)
	switch contract.Classify(ctx, err, q.l.own, q.l.fail, contract.Ignore, contract.Ignore) {
	case contract.Pass:
		s.Pass()
	case contract.Fail:
		s.Fail()
	default:
		s.Ignore()
	}
	return err
}
