package wardhttp

import (
	"math"
	"sync/atomic"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/tally"
)

// RetryBudget is gRPC's retry throttling (proposal A6): a bucket of tokens that starts full at
// MaxTokens; every failed attempt takes one token, every successful one gives back Ratio of a
// token, and a retry is allowed only while more than half the bucket is left. In a healthy
// system the bucket stays full and every retryable failure is retried; in an outage the failures
// drain it within MaxTokens/2 attempts and retries stop, so clients retrying cannot multiply the
// load on a backend that is already failing. In steady partial failure retries settle at about
// Ratio per successful call: with the default Ratio of 0.1, 10% of calls.
//
// Attempts settle with ward's verbs: Pass, Fail, Ignore. Tokens are kept in thousandths in one
// atomic word, moved by compare-and-set. Safe for
// concurrent use; must not be copied after first use. Build one with NewRetryBudget.
type RetryBudget struct {
	_      noCopy
	tokens atomic.Int64 // thousandths of a token
	max    int64        // thousandths
	ratio  int64        // thousandths given back per success
	counts tally.Table  // per P: retries allowed and refused, attempts settled (Counts)
}

type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// DefaultRetryTokens and DefaultRetryRatio are the budget's preset: the values of gRPC's service
// config example for retry throttling (maxTokens 10, tokenRatio 0.1).
const (
	DefaultRetryTokens = 10
	DefaultRetryRatio  = 0.1
)

// NewRetryBudget returns a full budget of maxTokens that gives back ratio of a token per success.
// Both are kept in thousandths, as A6 keeps them: maxTokens is rounded to the nearest thousandth
// and must lie in [0.001, 1000]; ratio is truncated to thousandths (A6 ignores any further
// precision) and must lie in [0.001, 1]. A value that would keep no thousandth at all (a budget
// that never retries, a ratio that never refills) is an error naming the argument, not a value
// moved into range.
func NewRetryBudget(maxTokens, ratio float64) (*RetryBudget, error) {
	if !(maxTokens <= 1000) || !(math.Round(maxTokens*1000) >= 1) {
		return nil, contract.Field(ErrInvalid, "maxTokens", maxTokens, "in [0.001, 1000]")
	}
	if !(ratio <= 1) || !(int64(ratio*1000) >= 1) {
		return nil, contract.Field(ErrInvalid, "ratio", ratio, "in [0.001, 1]")
	}
	b := &RetryBudget{max: int64(math.Round(maxTokens * 1000)), ratio: int64(ratio * 1000)}
	b.tokens.Store(b.max)
	b.counts.Init()
	return b, nil
}

// Allow says whether a retry may be made now: more than half the bucket is left. It spends
// nothing; the retry's own outcome does.
func (b *RetryBudget) Allow() bool {
	if b.tokens.Load()*2 > b.max {
		b.counts.Add(tally.Admitted)
		return true
	}
	b.counts.Add(tally.Refused)
	return false
}

// Pass settles a successful attempt: it gives back the ratio of a token.
func (b *RetryBudget) Pass() { b.counts.Add(tally.Passed); b.add(b.ratio) }

// Fail settles a failed attempt (an overload or a failure, as ward's contract has it): it takes
// one token.
func (b *RetryBudget) Fail() { b.counts.Add(tally.Failed); b.add(-1000) }

// Ignore settles an attempt that says nothing about the backend (the caller gave up): it moves
// nothing.
func (b *RetryBudget) Ignore() { b.counts.Add(tally.Ignored) }

// Failure is Fail.
//
// Deprecated: use Fail, the contract's verb.
func (b *RetryBudget) Failure() { b.Fail() }

// Success is Pass.
//
// Deprecated: use Pass, the contract's verb.
func (b *RetryBudget) Success() { b.Pass() }

// Counts returns the budget's counts since NewRetryBudget ([ward.Counts]), in a budget's own
// sense: Admitted and Refused are the retries Allow allowed and refused; Passed, Failed and
// Ignored are the attempts settled, first attempts included, so they do not add up to Admitted.
// They are kept in per-P rows and folded here.
func (b *RetryBudget) Counts() ward.Counts { return b.counts.Counts() }

// Tokens returns the tokens left.
func (b *RetryBudget) Tokens() float64 { return float64(b.tokens.Load()) / 1000 }

func (b *RetryBudget) add(d int64) {
	for {
		old := b.tokens.Load()
		n := min(max(old+d, 0), b.max)
		if n == old || b.tokens.CompareAndSwap(old, n) {
			return
		}
	}
}
