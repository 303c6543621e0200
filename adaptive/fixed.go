package adaptive

import "github.com/wardgo/ward/internal/contract"

// FixedRule is a rule that never moves: a plain bulkhead. Build one with [NewFixed].
type FixedRule struct{ n int }

// NewFixed returns a rule that holds the limit at n calls, n >= 1. When you know the right number
// (a pool of 10 connections, a licence for 4 sessions), a fixed limit is simpler and more
// predictable than any adaptive rule.
func NewFixed(n int) (*FixedRule, error) {
	if n < 1 {
		return nil, contract.Field(ErrInvalid, "Fixed.n", n, ">= 1")
	}
	return &FixedRule{n}, nil
}

// Limit returns n.
func (f *FixedRule) Limit() int { return f.n }

// Sample does nothing: the limit never moves.
func (f *FixedRule) Sample(Sample) {}

func (f *FixedRule) bounds() (lo, hi int) { return f.n, f.n }
