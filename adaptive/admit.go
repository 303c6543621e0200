package adaptive

import (
	"context"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/contract"
)

// The admissions of ward's one contract ([ward.Guard]): a Limiter, a Partition and a Queue admit
// with an [ward.Admission] as they do with a Lease, and settle it the same way.

// Admit admits a call as [Limiter.Acquire] does, with an [ward.Admission] that settles as the
// Lease would: a refusal is [ErrLimitExceeded], and a ctx already done returns its error without
// taking a slot. End(ctx, err) on the admission classifies err as [Limiter.Do] does. It
// allocates nothing.
func (l *Limiter) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	ls, ok := l.Acquire()
	if !ok {
		return ward.Admission{}, ErrLimitExceeded
	}
	return ls.admission((*leaseSettler)(l)), nil
}

// Admit admits a call of this partition as [Partition.Acquire] does, with an [ward.Admission]
// that settles as the PartitionLease would; a ctx already done returns its error without taking
// a slot. It allocates nothing.
func (p *Partition) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	pl, ok := p.Acquire()
	if !ok {
		return ward.Admission{}, ErrLimitExceeded
	}
	return pl.lease.admission((*partitionSettler)(p)), nil
}

// Admit admits a call as [Queue.Acquire] does, waiting in line while ctx allows, with an
// [ward.Admission] that settles as the Slot would. Only the waiting path allocates.
func (q *Queue) Admit(ctx context.Context) (ward.Admission, error) {
	s, err := q.Acquire(ctx)
	if err != nil {
		return ward.Admission{}, err
	}
	s.q = nil // the admission's settler counts the settle
	return s.lease.admission((*queueSettler)(q)), nil
}

// admission carries the lease in the two words of an Admission: its start and its probe. The
// lease itself is left settled.
func (ls *Lease) admission(s ward.Settler) ward.Admission {
	start, probe := ls.start, ls.probe
	ls.lim = nil
	return ward.Admitted(s, start, probe)
}

// lease rebuilds the Lease an admission carried.
func lease(l *Limiter, a, b int64) Lease { return Lease{lim: l, start: a, probe: b} }

// settleLease settles ls as o.
func settleLease(ls *Lease, o ward.Outcome) {
	contract.Settle(o, ls.Pass, ls.Fail, ls.Ignore)
}

// leaseSettler is a Limiter seen as the settler of its admissions.
type leaseSettler Limiter

func (s *leaseSettler) Settle(a, b int64, o ward.Outcome) {
	ls := lease((*Limiter)(s), a, b)
	settleLease(&ls, o)
}

func (s *leaseSettler) End(ctx context.Context, a, b int64, err error) {
	s.Settle(a, b, (*Limiter)(s).classify(ctx, err))
}

// partitionSettler is a Partition seen as the settler of its admissions.
type partitionSettler Partition

func (s *partitionSettler) Settle(a, b int64, o ward.Outcome) {
	p := (*Partition)(s)
	pl := PartitionLease{lease(p.set.l, a, b), p}
	contract.Settle(o, pl.Pass, pl.Fail, pl.Ignore)
}

func (s *partitionSettler) End(ctx context.Context, a, b int64, err error) {
	s.Settle(a, b, (*Partition)(s).set.l.classify(ctx, err))
}

// queueSettler is a Queue seen as the settler of its admissions.
type queueSettler Queue

func (s *queueSettler) Settle(a, b int64, o ward.Outcome) {
	q := (*Queue)(s)
	sl := Slot{lease(q.l, a, b), q}
	contract.Settle(o, sl.Pass, sl.Fail, sl.Ignore)
}

func (s *queueSettler) End(ctx context.Context, a, b int64, err error) {
	s.Settle(a, b, (*Queue)(s).l.classify(ctx, err))
}

// classify is the limiter's one classification of a call's error, the one Do applies (ownAs,
// otherAs).
func (l *Limiter) classify(ctx context.Context, err error) ward.Outcome {
	return contract.Classify(ctx, err, l.own, l.fail, ownAs, otherAs)
}
