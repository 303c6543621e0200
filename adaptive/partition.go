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
// a partition gets back what it is owed as borrowed calls settle.
//
// A Partitions is safe for concurrent use and must not be copied. A partition's calls in flight
// are a fold of per-P counts: exact when no call of it is being admitted or settled, otherwise a
// reading of words that move independently, as [Limiter.InFlight] is; the guarantee and hunger
// decisions read them that way.
//
// # How it works
//
// A partition counts its calls (admitted, refused, settled by outcome) in per-P rows, written in
// the same pinned section in which the Limiter takes or gives back the call's credit, so a call
// through a partition touches no cache line that other cores write. Its calls in flight are its
// admissions less its settles, summed over the rows, which is read only when a decision needs
// it: while some partition is hungry (an admission checks whether it would borrow), when the
// Limiter refuses a call (was it within its guarantee?) and when a call of a hungry partition
// settles (did its calls in flight fall to zero?). With no partition hungry, an admission reads
// one word that only a change of hunger writes.
//
// # Edge cases
//
//   - Take every call through a partition: a call taken from the Limiter directly uses a slot no
//     partition accounts for, and can make a partition within its guarantee wait.
//   - Guarantees follow the limit as it moves (floor(Fraction × Limit()), read at each decision).
//     A limit lowered below the calls in flight interrupts none: a partition within its
//     guarantee may be refused until borrowers settle.
//   - Fractions that sum under 1 leave the rest to borrowers only.
type Partitions struct {
	_      stripe.NoCopy
	_      [stripe.CacheLine]byte
	hungry atomic.Int64 // how many partitions are hungry: read by every admission, written when hunger starts or ends
	_      [stripe.CacheLine - unsafe.Sizeof(atomic.Int64{})]byte
	l      *Limiter
	parts  []*Partition
}

// Partition is one named share of a [Partitions]: it admits and runs calls as a Limiter does.
type Partition struct {
	_        [stripe.CacheLine]byte
	hungry   atomic.Int32 // refused within its guarantee, and not yet served to it: read by each settle
	_        [stripe.CacheLine - unsafe.Sizeof(atomic.Int32{})]byte
	fraction float64
	name     string
	set      *Partitions
	counts   stripe.Table // per P: this partition's ward.Counts (internal/tally's order)
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
		p.counts.Init(tally.Words)
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

// InFlight returns how many of this partition's calls have not settled: exact when none of them
// is being admitted or settled.
func (p *Partition) InFlight() int { return int(p.inFlight()) }

// inFlight folds the partition's admissions less its settles over every P's row (never below 0).
func (p *Partition) inFlight() int64 {
	var n int64
	for row := range p.counts.All() {
		c := (*[tally.Words]int64)(row)
		n += stripe.Load(&c[tally.Admitted]) - stripe.Load(&c[tally.Passed]) - stripe.Load(&c[tally.Failed]) - stripe.Load(&c[tally.Ignored])
	}
	return max(n, 0)
}

// Guarantee returns the calls in flight this partition is guaranteed at the current limit:
// floor(Fraction × Limit()).
func (p *Partition) Guarantee() int { return int(p.guarantee(p.set.l.limit.Load())) }

func (p *Partition) guarantee(limit int64) int64 {
	return int64(math.Floor(p.fraction * float64(limit)))
}

// PartitionLease is a call a [Partition] admitted: settle it once with Pass, Fail or Ignore, as
// a [Lease]. Settling the same variable twice is a no-op; the zero
// PartitionLease, and one returned with a refusal, are settled already.
type PartitionLease struct {
	lease Lease
	part  *Partition
}

// Pass settles a call that succeeded: its response time is a sample.
func (pl *PartitionLease) Pass() { pl.settle(wPassed) }

// Fail settles a call that timed out or met an overload answer: a sample marked dropped.
func (pl *PartitionLease) Fail() { pl.settle(wFailed) }

// Ignore frees the slot without a sample.
func (pl *PartitionLease) Ignore() { pl.settle(wIgnored) }

// settle settles the call as o (wPassed, wFailed or wIgnored), as Lease.settle does.
func (pl *PartitionLease) settle(o uintptr) {
	if l := pl.lease.lim; l != nil {
		pl.lease.lim = nil
		l.settlePart(o, pl)
	}
}

// Acquire admits a call of this partition if the Limiter has a slot, unless the call would
// borrow (this partition is at or beyond its guarantee) while another partition is hungry. It
// never blocks and allocates nothing. A borrower refused for hunger is not counted in the
// Limiter's Refused.
func (p *Partition) Acquire() (PartitionLease, bool) {
	lease, ok := p.set.l.take(p)
	return PartitionLease{lease, p}, ok
}

// borrows reports whether a call of p, taken while some partition is hungry, is a borrower (p is
// beyond its guarantee with it) while a partition other than p is hungry: such a call is refused,
// and counted so in p's row. A call that brings p to its guarantee ends p's own hunger; should
// the Limiter refuse it, the refusal starts it again (refused).
func (p *Partition) borrows() bool {
	n, g := p.inFlight()+1, p.guarantee(p.set.l.limit.Load())
	if n > g && p.set.hungryBesides(p) {
		tally.AddRow(p.counts.Pin(), tally.Refused)
		stripe.Unpin()
		return true
	}
	if n >= g {
		p.sate()
	}
	return false
}

// refused marks the partition hungry when the Limiter refused a call of it within its guarantee.
func (p *Partition) refused() {
	if p.hungry.Load() != 0 {
		return
	}
	if g := p.guarantee(p.set.l.limit.Load()); g > 0 && p.inFlight()+1 <= g {
		p.starve()
	}
}

// settled is told after a call of p settled: hunger ends when the partition's calls in flight
// fall to zero. Small enough to inline: a settle while no partition is hungry loads one word.
func (p *Partition) settled() {
	if p.hungry.Load() != 0 {
		p.sateIdle()
	}
}

// sateIdle ends the partition's hunger if none of its calls is in flight.
func (p *Partition) sateIdle() {
	if p.inFlight() == 0 {
		p.sate()
	}
}

// starve marks the partition hungry.
func (p *Partition) starve() {
	if p.hungry.Load() == 0 && p.hungry.CompareAndSwap(0, 1) {
		p.set.hungry.Add(1)
	}
}

// sate ends the partition's hunger.
func (p *Partition) sate() {
	if p.hungry.Load() != 0 && p.hungry.CompareAndSwap(1, 0) {
		p.set.hungry.Add(-1)
	}
}

// hungryBesides reports whether a partition other than p is hungry.
func (ps *Partitions) hungryBesides(p *Partition) bool {
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
