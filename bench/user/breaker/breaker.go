// Package breaker is ward's breaker as a user's program calls it: Allow, the work, Pass or Fail
// (see package user).
package breaker

import "github.com/wardgo/ward/breaker"

// Breaker returns a call through a Breaker with policy p.
func Breaker(p breaker.Policy) (func(work func(), outcome uint8) bool, error) {
	b, err := breaker.New(breaker.WithPolicy(p))
	if err != nil {
		return nil, err
	}
	return func(work func(), outcome uint8) bool {
		promise, err := b.Allow()
		if err != nil {
			return false
		}
		work()
		if outcome == 0 {
			promise.Pass()
		} else {
			promise.Fail()
		}
		return true
	}, nil
}
