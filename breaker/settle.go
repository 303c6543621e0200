package breaker

import "github.com/wardgo/ward"

// Settle records, at now, a call the Core allowed as o: a Pass is a [Success], a Fail a
// [Failure], and an Ignore records nothing (the backend never answered). It is the pure layer's
// form of ward's one settle vocabulary, the same [ward.Outcome] an Admission settles with; Record
// remains for a refusal made elsewhere ([Drop]).
func (c *Core) Settle(now int64, o ward.Outcome) {
	switch o {
	case ward.Pass:
		c.Record(now, Success)
	case ward.Fail:
		c.Record(now, Failure)
	}
}
