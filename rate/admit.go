package rate

import (
	"context"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/contract"
)

// The admissions of ward's one contract ([ward.Guard]). A rate limit learns nothing from how a
// call ends, so it admits with the zero [ward.Admission], which settles nothing: the token is
// spent when the call is admitted.

// Admit takes one token at Now as [BucketLimiter.Do] does, with an admission that settles
// nothing; a refusal is [ErrLimited] with the wait until a token would be there, and a ctx
// already done returns its error and takes no token.
func (b *BucketLimiter) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	now := b.Now()
	return admitted(b.decide(now, b.at(now), b.one, true))
}

// Admit counts one event at Now as [SlidingLimiter.Do] does, with an admission that settles
// nothing; a refusal is [ErrLimited] with its wait, and a ctx already done counts nothing.
func (l *SlidingLimiter) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	return admitted(l.TakeAt(l.Now(), 1))
}

// Admit counts one event at Now as [PeriodLimiter.Do] does, with an admission that settles
// nothing; a refusal is [ErrLimited] with the wait until the period ends, and a ctx already done
// counts nothing.
func (l *PeriodLimiter) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	return admitted(l.TakeAt(l.Now(), 1))
}

// admitted is the answer of an Admit that decided ok, or refused with wait.
func admitted(ok bool, wait time.Duration) (ward.Admission, error) {
	if !ok {
		return ward.Admission{}, contract.Wait(ErrLimited, wait)
	}
	return ward.Admission{}, nil
}
