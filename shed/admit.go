package shed

import (
	"context"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/contract"
)

// Admit asks to start one call, as [Shedder.Allow] does, and returns an [ward.Admission] that
// settles as the Promise would: a refusal is [ErrOverloaded]; a ctx already done returns its
// error, neither entering flight nor recording anything. End(ctx, err) on the admission
// classifies err as [Shedder.Do] does (an own error passes, any other error fails). It allocates
// nothing.
func (s *Shedder) Admit(ctx context.Context) (ward.Admission, error) {
	if err := contract.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	p, err := s.Allow()
	if err != nil {
		return ward.Admission{}, err
	}
	if p.s == nil {
		return ward.Admission{}, nil
	}
	var timed int64
	if p.timed {
		timed = 1
	}
	start := p.start
	p.s = nil
	return ward.Admitted((*settler)(s), start, timed), nil
}

// settler is a Shedder seen as the settler of its admissions.
type settler Shedder

func (st *settler) Settle(a, b int64, o ward.Outcome) {
	p := Promise{s: (*Shedder)(st), start: a, timed: b != 0}
	contract.Settle(o, p.Pass, p.Fail, p.Ignore)
}

func (st *settler) End(ctx context.Context, a, b int64, err error) {
	s := (*Shedder)(st)
	st.Settle(a, b, contract.Classify(ctx, err, s.own, s.fail, contract.Pass, contract.Fail))
}
