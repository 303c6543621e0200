package rate

import (
	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/tally"
)

// WithCounts makes a [BucketLimiter] or a [PeriodLimiter] count its calls, admitted and refused,
// for [ward.Counts]: each call then adds one to a row of its own P (a plain add on a cache line
// no other core writes), which a reader of Counts folds. Without it their Counts stay zero and
// their calls pay nothing for metrics. A [SlidingLimiter] counts with or without it, under the
// lock it takes anyway.
func WithCounts() Option {
	return func(c *config) error { c.counts = true; return nil }
}

// table returns the per-P rows of counts a limiter built with c keeps: nil without WithCounts.
func (c *config) table() *tally.Table {
	if !c.counts {
		return nil
	}
	t := new(tally.Table)
	t.Init()
	return t
}

// count counts one call, admitted when ok, in t.
func count(t *tally.Table, ok bool) {
	i := tally.Refused
	if ok {
		i = tally.Admitted
	}
	t.Add(i)
}

// Counts returns the limiter's counts since it was built ([ward.Counts]) when it was built with
// [WithCounts], and zero counts otherwise ([BucketLimiter.Counting] tells which). Every call
// (Allow, TakeAt, Acquire, Admit, Do; n tokens taken at once are one call) is admitted or
// refused; a call with a context already done counts nothing. A rate limit settles nothing, so
// Passed, Failed and Ignored stay zero, and a Release does not take an admission back.
func (b *BucketLimiter) Counts() ward.Counts {
	if b.counts == nil {
		return ward.Counts{}
	}
	return b.counts.Counts()
}

// Counting reports whether the limiter counts its calls ([WithCounts]).
func (b *BucketLimiter) Counting() bool { return b.counts != nil }

// Counts returns the limiter's counts since it was built ([ward.Counts]), kept whether or not it
// was built with [WithCounts]: every call admitted or refused, as [BucketLimiter.Counts] counts
// them. It takes the limiter's lock for an instant.
func (l *SlidingLimiter) Counts() ward.Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ward.Counts{Admitted: l.admitted, Refused: l.refused}
}

// Counting reports whether the limiter counts its calls: always.
func (l *SlidingLimiter) Counting() bool { return true }

// Counts returns the limiter's counts since it was built ([ward.Counts]) when it was built with
// [WithCounts], and zero counts otherwise: every call admitted or refused, as
// [BucketLimiter.Counts] counts them (TakeQuota's Over is a refusal).
func (l *PeriodLimiter) Counts() ward.Counts {
	if l.counts == nil {
		return ward.Counts{}
	}
	return l.counts.Counts()
}

// Counting reports whether the limiter counts its calls ([WithCounts]).
func (l *PeriodLimiter) Counting() bool { return l.counts != nil }
