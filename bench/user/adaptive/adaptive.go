// Package adaptive is ward's adaptive limiter as a user's program calls it: Acquire, the work,
// Pass or Fail (see package user).
package adaptive

import "github.com/wardgo/ward/adaptive"

// Gradient returns a call through a Limiter on the Gradient rule whose limit is fixed at limit (a
// limit the caller never reaches measures the admission path), one call in every timed.
func Gradient(limit, every int) (func(work func(), outcome uint8) bool, error) {
	p := adaptive.DefaultGradient()
	p.Initial, p.Min, p.Max = limit, limit, limit
	rule, err := adaptive.NewGradient(p)
	if err != nil {
		return nil, err
	}
	l, err := adaptive.New(rule, adaptive.WithSampleEvery(every))
	if err != nil {
		return nil, err
	}
	return func(work func(), outcome uint8) bool {
		lease, ok := l.Acquire()
		if !ok {
			return false
		}
		work()
		if outcome == 0 {
			lease.Pass()
		} else {
			lease.Fail()
		}
		return true
	}, nil
}
