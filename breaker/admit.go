package breaker

import (
	"context"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/contract"
)

// Admit asks to make one call, as [Breaker.Allow] does, and returns an [ward.Admission] that
// settles as the Promise would: a refusal is [ErrUnavailable]; a ctx already done returns its
// error and records nothing. End(ctx, err) on the admission classifies err as [Breaker.Do] does
// (an own error passes, any other error fails). It allocates nothing.
func (b *Breaker) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	p, err := b.Allow()
	if err != nil {
		return ward.Admission{}, err
	}
	if p.b == nil { // a breaker that records nothing (NewNop)
		return ward.Admission{}, nil
	}
	p.b = nil
	return ward.Admitted((*settler)(b), 0, 0), nil
}

// settler is a Breaker seen as the settler of its admissions.
type settler Breaker

func (s *settler) Settle(_, _ int64, o ward.Outcome) {
	p := Promise{(*Breaker)(s)}
	contract.Settle(o, p.Pass, p.Fail, p.Ignore)
}

func (s *settler) End(ctx context.Context, a, b int64, err error) {
	s.Settle(a, b, (*Breaker)(s).classify(ctx, err))
}

// classify is the breaker's one classification of a call's error, the one Do applies: the
// backend answered an own error (a pass), any other error is a failure.
func (b *Breaker) classify(ctx context.Context, err error) ward.Outcome {
	return contract.Classify(ctx, err, b.own, b.fail, contract.Pass, contract.Fail)
}
