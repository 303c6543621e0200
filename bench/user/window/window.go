// Package window is ward's striped rolling window as a user's program writes it: a clock read and
// an Add (see package user).
package window

import (
	"time"

	"github.com/wardgo/ward/atomicwindow"
)

// epoch is the origin of the instants written: time.Since of it is ward's own clock.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// Striped returns a call that adds 1 to field 0 of a Striped window of size buckets over window,
// at the clock's instant, then runs the work.
func Striped(size int, window time.Duration) (func(work func(), outcome uint8) bool, error) {
	w, err := atomicwindow.NewStriped(size, window, 1, now())
	if err != nil {
		return nil, err
	}
	return func(work func(), _ uint8) bool {
		w.Add(now(), 0, 1)
		work()
		return true
	}, nil
}
