package pool

import (
	"fmt"
	"time"

	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/retry"
	"github.com/wardgo/ward/shed"
)

// This file is the only one that names the methods of ward's other packages: the parts of a Ward
// made from their pure cores.

// FromBreaker returns a [Breaker] part deciding with c, a breaker core: a make is a call to the
// backend, Allow refuses it at the ratio the breaker's window shows. A nil c is an error naming
// it (a Ward without a breaker leaves the field nil).
func FromBreaker(c *breaker.Core) (Breaker, error) {
	if c == nil {
		return nil, contract.Field(ErrInvalid, "FromBreaker core", "nil", "a *breaker.Core")
	}
	return breakerPart{c}, nil
}

type breakerPart struct{ c *breaker.Core }

func (b breakerPart) Allow(now int64, roll float64) bool { return b.c.Allow(now, roll) }
func (b breakerPart) Ratio(now int64) float64            { return b.c.Ratio(now) }
func (b breakerPart) Record(now int64, ok bool) {
	if ok {
		b.c.Record(now, breaker.Success)
	} else {
		b.c.Record(now, breaker.Failure)
	}
}

// FromBucket returns a [Bucket] part spacing makes out with b, a token bucket: each make takes one
// token. A nil b is an error naming it (a Ward without a bucket leaves the field nil).
func FromBucket(b *rate.Bucket) (Bucket, error) {
	if b == nil {
		return nil, contract.Field(ErrInvalid, "FromBucket bucket", "nil", "a *rate.Bucket")
	}
	return bucketPart{b}, nil
}

type bucketPart struct{ b *rate.Bucket }

func (b bucketPart) Wait(now int64) time.Duration { return b.b.Next(now, 1) }
func (b bucketPart) Take(now int64)               { b.b.TakeAt(now, 1) }

// FromBackoff returns a [Backoff] part holding making back by b's delays: after the n-th failed
// make in a row, b's delay before its n-th retry. b's Attempts does not apply: a pool keeps trying
// at the ceiling's pace. An invalid b is an error matching ErrInvalid and naming b's field.
func FromBackoff(b retry.Backoff) (Backoff, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: FromBackoff: %w", ErrInvalid, err)
	}
	return backoffPart{b}, nil
}

type backoffPart struct{ b retry.Backoff }

func (b backoffPart) Delay(failures int, roll float64, previous time.Duration) time.Duration {
	return b.b.Delay(failures, roll, previous)
}

// FromShedder returns a [Shedder] part deciding with c, a shedder core, at the CPU readings cpu
// returns (thousandths; shed.CPU reads the process's). A lend is a call in flight until the
// resource comes back; one that comes back whole counts toward what the process has shown it can
// carry. The part keeps the shedder's open tickets in a table that grows to the pool's size and
// is reused after. A nil c or cpu is an error naming it.
func FromShedder(c *shed.Core, cpu func() int) (Shedder, error) {
	if c == nil {
		return nil, contract.Field(ErrInvalid, "FromShedder core", "nil", "a *shed.Core")
	}
	if cpu == nil {
		return nil, contract.Field(ErrInvalid, "FromShedder cpu", "nil", "a function")
	}
	return &shedPart{c: c, cpu: cpu}, nil
}

type shedPart struct {
	c       *shed.Core
	cpu     func() int
	tickets []shed.Ticket
	free    []int
}

func (s *shedPart) Lend(now int64) (int, bool) {
	t, ok := s.c.Allow(now, s.cpu())
	if !ok {
		return 0, false
	}
	if n := len(s.free) - 1; n >= 0 {
		i := s.free[n]
		s.free = s.free[:n]
		s.tickets[i] = t
		return i, true
	}
	s.tickets = append(s.tickets, t)
	return len(s.tickets) - 1, true
}

func (s *shedPart) Return(loan int, now int64, ok bool) {
	if uint(loan) >= uint(len(s.tickets)) {
		return
	}
	t := &s.tickets[loan]
	if ok {
		t.Pass(now)
	} else {
		t.Fail()
	}
	s.free = append(s.free, loan)
}
