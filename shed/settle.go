package shed

import "github.com/wardgo/ward"

// Settle settles, at now, the call as o: Pass(now), Fail or Ignore (which need no instant). It is
// the pure layer's form of ward's one settle vocabulary, the same [ward.Outcome] an Admission
// settles with, so a caller that classifies outcomes once drives every pure core alike.
func (t *Ticket) Settle(now int64, o ward.Outcome) {
	switch o {
	case ward.Pass:
		t.Pass(now)
	case ward.Fail:
		t.Fail()
	default:
		t.Ignore()
	}
}
