package adaptive

import "github.com/wardgo/ward"

// Settle settles, at now, the call as o: Pass(now), Fail(now) or Ignore. It is the pure layer's
// form of ward's one settle vocabulary, the same [ward.Outcome] an Admission settles with, so a
// caller (or a simulation) that classifies outcomes once drives every pure core alike.
func (t *Ticket) Settle(now int64, o ward.Outcome) {
	switch o {
	case ward.Pass:
		t.Pass(now)
	case ward.Fail:
		t.Fail(now)
	default:
		t.Ignore()
	}
}
