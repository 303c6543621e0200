package adaptive

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// Share is one partition of a limit: a name and the fraction of the limit it is guaranteed.
type Share struct {
	Name     string
	Fraction float64 // in (0, 1]; the fractions of a set sum to at most 1
}

// Partitions splits one [Limiter]'s limit into named partitions (live 70%, batch 30%): each is
// guaranteed floor(Fraction × limit) calls in flight, may borrow capacity the others leave idle,
// and the calls in flight of all partitions together never exceed the limit, which the Limiter
// itself enforces (every call takes its slot from it). Netflix concurrency-limits' partitions
// check each partition and the whole apart, so their sum can exceed the limit
// (Netflix/concurrency-limits issue 233).
//
// Every call takes a slot while the Limiter has one: idle capacity is borrowed freely. A call
// refused while its partition is within its guarantee marks the partition hungry; while any
// partition is hungry, a call of another partition beyond its own guarantee (a borrower) is
// refused, so slots freed by borrowers go to the hungry partition. Hunger ends when the partition
// is admitted at its guarantee, or when its calls in flight fall to zero. No call is interrupted:
// a partition gets back what it is owed as borrowed calls settle. The borrowers' check reads one
// word per partition, each on a cache line of its own.
//
// A Partitions is safe for concurrent use and must not be copied.
//
// # Edge cases
//
//   - Take every call through a partition: a call taken from the Limiter directly uses a slot no
//     partition accounts for, and can make a partition within its guarantee wait.
//   - Guarantees follow the limit as it moves (floor(Fraction × Limit()), read at each admission).
//     A limit lowered below the calls in flight interrupts none: a partition within its
//     guarantee may be refused until borrowers settle.
//   - Fractions that sum under 1 leave the rest to borrowers only.
type Partitions struct {
	_     stripe.NoCopy
	l     *Limiter
	parts []*Partition
}

// Partition is one named share of a [Partitions]: it admits and runs calls as a Limiter does.
type Partition struct {
	_        [stripe.CacheLine]byte
	inFlight atomic.Int64 // written by this partition's calls: a line of its own
	hungry   atomic.Int32 // refused within its guarantee, and not yet served to it
	_        [stripe.CacheLine - unsafe.Sizeof(atomic.Int64{}) - unsafe.Sizeof(atomic.Int32{})]byte
	fraction float64
	name     string
	set      *Partitions
	counts   tally.Table // per P: this partition's ward.Counts
}

// NewPartitions returns the partitions of l's limit. Names must be unique and not empty;
// fractions in (0, 1], summing to at most 1.
func NewPartitions(l *Limiter, shares ...Share) (*Partitions, error) {
	if l == nil {
		return nil, contract.Field(ErrInvalid, "limiter", "nil", "a *Limiter")
	}
	if len(shares) == 0 {
		return nil, contract.Field(ErrInvalid, "shares", 0, "at least one Share")
	}
	ps := &Partitions{l: l}
	sum := 0.0
	seen := map[string]bool{}
	for i, s := range shares {
		field := fmt.Sprintf("shares[%d]", i)
		switch {
		case s.Name == "" || seen[s.Name]:
			return nil, contract.Field(ErrInvalid, field+".Name", fmt.Sprintf("%q", s.Name), "a name not empty and not used before")
		case !(s.Fraction > 0 && s.Fraction <= 1):
			return nil, contract.Field(ErrInvalid, field+".Fraction", s.Fraction, "in (0, 1]")
		}
		seen[s.Name] = true
		sum += s.Fraction
		p := &Partition{fraction: s.Fraction, name: s.Name, set: ps}
		p.counts.Init(false)
		ps.parts = append(ps.parts, p)
	}
	if sum > 1+1e-9 {
		return nil, contract.Field(ErrInvalid, "shares", fmt.Sprintf("fractions summing to %v", sum), "a sum <= 1")
	}
	return ps, nil
}

// Partition returns the partition named name, or nil if there is none. Look it up once and keep
// it: the lookup is a scan.
func (ps *Partitions) Partition(name string) *Partition {
	for _, p := range ps.parts {
		if p.name == name {
			return p
		}
	}
	return nil
}

// Now returns the instant the limiter's clock reads (see [Limiter.Now]).
func (p *Partition) Now() int64 { return p.set.l.Now() }

// Name returns the partition's name.
func (p *Partition) Name() string { return p.name }

// InFlight returns how many of this partition's calls have not settled.
func (p *Partition) InFlight() int { return int(p.inFlight.Load()) }

// Guarantee returns the calls in flight this partition is guaranteed at the current limit:
// floor(Fraction × Limit()).
func (p *Partition) Guarantee() int { return p.guarantee(p.set.l.limit.Load()) }

func (p *Partition) guarantee(limit int64) int {
	return int(math.Floor(p.fraction * float64(limit)))
}

// PartitionLease is a call a [Partition] admitted: settle it once with Pass, Fail or Ignore, as
// a [Lease] (which it settles). Settling the same variable twice is a no-op; the zero
// PartitionLease is settled already.
type PartitionLease struct {
	lease Lease
	p     *Partition
}

// Pass settles a call that succeeded: its response time is a sample.
func (pl *PartitionLease) Pass() { l := pl.lease; pl.free(tally.Passed); l.Pass() }

// Fail settles a call that timed out or met an overload answer: a sample marked dropped.
func (pl *PartitionLease) Fail() { l := pl.lease; pl.free(tally.Failed); l.Fail() }

// Ignore frees the slot without a sample.
func (pl *PartitionLease) Ignore() { l := pl.lease; pl.free(tally.Ignored); l.Ignore() }

// free takes the call out of its partition's count before the slot is freed (so a call of the
// same partition racing for that slot never counts it twice), and clears the partition's hunger
// once it has drained. It counts the settle as o.
func (pl *PartitionLease) free(o int) {
	if p := pl.p; p != nil {
		pl.p = nil
		pl.lease = Lease{}
		p.counts.Add(o)
		if p.inFlight.Add(-1) == 0 {
			p.hungry.CompareAndSwap(1, 0)
		}
	}
}

// Acquire admits a call of this partition if the Limiter has a slot, unless the call would
// borrow (this partition is at or beyond its guarantee) while another partition is hungry. It
// never blocks and allocates nothing. A borrower refused for hunger is not counted in the
// Limiter's Refused.
func (p *Partition) Acquire() (PartitionLease, bool) {
	n := p.inFlight.Add(1)
	g := int64(p.guarantee(p.set.l.limit.Load()))
	if n > g && p.set.hungry(p) {
		p.inFlight.Add(-1)
		p.counts.Add(tally.Refused)
		return PartitionLease{}, false
	}
	lease, ok := p.set.l.Acquire()
	if !ok {
		p.inFlight.Add(-1)
		p.counts.Add(tally.Refused)
		if n <= g && p.hungry.Load() == 0 {
			p.hungry.Store(1)
		}
		return PartitionLease{}, false
	}
	if n >= g && p.hungry.Load() != 0 {
		p.hungry.Store(0)
	}
	p.counts.Add(tally.Admitted)
	return PartitionLease{lease, p}, true
}

// hungry reports whether a partition other than p is hungry.
func (ps *Partitions) hungry(p *Partition) bool {
	for _, q := range ps.parts {
		if q != p && q.hungry.Load() != 0 {
			return true
		}
	}
	return false
}

// Do runs fn as a call of this partition: a refusal returns [ErrLimitExceeded] without calling
// fn; fn's error settles the call as [Limiter.Do] does (ward's one classification, with the
// limiter's WithOwnError and WithFailure); a panicking fn settles as a Fail and the panic
// continues. Do returns fn's error unchanged. A ctx already done returns its error without taking
// a slot.
func (p *Partition) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	pl, ok := p.Acquire()
	if !ok {
		return ErrLimitExceeded
	}
	defer pl.Fail() // a no-op once settled: only a panicking fn gets here unsettled
	err := fn(ctx)
	contract.Settle(contract.Classify(ctx, err, p.set.l.own, p.set.l.fail, ownAs, otherAs), pl.Pass, pl.Fail, pl.Ignore)
	return err
}
