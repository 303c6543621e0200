// Package adaptive is ward's adaptive limiter as a user's program calls it: Acquire, the work,
// Pass or Fail (see package user).
package adaptive

import "github.com/wardgo/ward/adaptive"

// Gradient returns a call through a Limiter on the Gradient rule whose limit is fixed at limit (a
// limit the caller never reaches measures the admission path), one call in every timed.
func Gradient(limit, every int) (func(work func(), outcome uint8) bool, error) {
	l, err := limiter(limit, every)
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

// Partition returns a call through the first of two partitions (70% and 30%) of a limiter made as
// Gradient's is. The call is written out as Gradient's is: shared through a func value or a type
// parameter, Acquire and Pass would be called indirectly, which is not how a user calls them.
func Partition(limit, every int) (func(work func(), outcome uint8) bool, error) {
	l, err := limiter(limit, every)
	if err != nil {
		return nil, err
	}
	ps, err := adaptive.NewPartitions(l, adaptive.Share{Name: "live", Fraction: 0.7}, adaptive.Share{Name: "batch", Fraction: 0.3})
	if err != nil {
		return nil, err
	}
	p := ps.Partition("live")
	return func(work func(), outcome uint8) bool {
		lease, ok := p.Acquire()
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

// limiter returns a Limiter on the Gradient rule whose limit is fixed at limit, one call in every
// timed.
func limiter(limit, every int) (*adaptive.Limiter, error) {
	p := adaptive.DefaultGradient()
	p.Initial, p.Min, p.Max = limit, limit, limit
	rule, err := adaptive.NewGradient(p)
	if err != nil {
		return nil, err
	}
	return adaptive.New(rule, adaptive.WithSampleEvery(every))
}
