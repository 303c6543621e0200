// Package failurewindow is ward's failure window as a user's program calls it: Admit or AdmitAt of
// a key (see package user).
package failurewindow

import (
	"time"

	"github.com/wardgo/ward/failurewindow"
)

// Known returns an admission of a key at the instant now by a Window of limit failures over
// window, in which each of keys has failed once at instant 0 (so each is known and under its
// limit when limit > 1).
func Known(keys []string, limit int, window time.Duration, now int64) (func(key string) bool, error) {
	w, err := failurewindow.New(limit, window, failurewindow.WithClock(func() int64 { return 0 }))
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		w.RecordAt(k, 0)
	}
	return func(key string) bool {
		ok, _ := w.AdmitAt(key, now)
		return ok
	}, nil
}

// Failing returns a call admitting key through a Window of limit failures over window, on ward's
// clock, in which key has failed failures times: Admit, and the work when admitted.
func Failing(key string, limit, failures int, window time.Duration) (func(work func(), outcome uint8) bool, error) {
	w, err := failurewindow.New(limit, window)
	if err != nil {
		return nil, err
	}
	for range failures {
		w.Record(key)
	}
	return func(work func(), _ uint8) bool {
		if ok, _ := w.Admit(key); !ok {
			return false
		}
		work()
		return true
	}, nil
}
