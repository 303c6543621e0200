package adaptive

// Default returns a limiter with ward's recommended rule at its preset, [DefaultKnee], and every
// other setting at its default (ward's clock, [DefaultWindow], one call in [DefaultSampleEvery]
// timed): the one-expression way to put an adaptive limit in front of a backend.
//
// It is New(NewKnee(DefaultKnee())) without the errors, which a preset cannot produce; build the
// limiter with [NewKnee] and [New] to change the policy or add options, and those report a bad
// value as an error naming the field. Each call returns a new limiter with a limit of its own,
// starting at the preset's Initial (20).
func Default() *Limiter {
	// NewKnee accepts its own preset, and New fails only on a nil rule or a bad option: neither
	// error can occur here.
	rule, _ := NewKnee(DefaultKnee())
	l, _ := New(rule)
	return l
}
