// Package shed is ward's load shedder as a user's program calls it: Allow, the work, Pass or Fail
// (see package user).
package shed

import "github.com/wardgo/ward/shed"

// Shedder returns a call through a Shedder whose CPU reading is always cpu (thousandths).
func Shedder(cpu int) (func(work func(), outcome uint8) bool, error) {
	s, err := shed.New(shed.WithCPU(func() int { return cpu }))
	if err != nil {
		return nil, err
	}
	return func(work func(), outcome uint8) bool {
		promise, err := s.Allow()
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
