package failurewindow_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/failurewindow"
)

func ExampleWindow_AdmitAt() {
	sec := int64(time.Second)
	// instants of the Window's clock: here a replayed timeline starting at 0, so the clock given
	// is one that stays there
	w, _ := failurewindow.New(3, time.Minute, failurewindow.WithClock(func() int64 { return 0 }))
	addr := "198.51.100.23"
	for i := int64(0); i < 3; i++ {
		w.RecordAt(addr, i*sec) // three failed logins at 0 s, 1 s, 2 s
	}
	ok, wait := w.AdmitAt(addr, 10*sec)
	fmt.Println(ok, wait) // the failure at 0 s leaves the window at 60 s
	ok, _ = w.AdmitAt(addr, 60*sec)
	fmt.Println(ok)
	ok, _ = w.AdmitAt("203.0.113.5", 10*sec)
	fmt.Println(ok)
	// Output:
	// false 50s
	// true
	// true
}

func ExampleNew() {
	_, err := failurewindow.New(0, time.Minute)
	fmt.Println(err)
	// Output: failurewindow: invalid configuration: limit = 0, want > 0
}

func ExampleWindow_Do() {
	errWrongPassword := errors.New("wrong password")
	errNoSuchUser := errors.New("no such user")
	now := int64(0) // an injected clock, so the waits print exactly
	w, _ := failurewindow.New(2, time.Minute,
		failurewindow.WithClock(func() int64 { return now }),
		failurewindow.WithOwnError(func(err error) bool { return errors.Is(err, errNoSuchUser) }))
	login := func(err error) func(context.Context) error {
		return func(context.Context) error { return err }
	}
	addr := "198.51.100.23"
	for _, outcome := range []error{errNoSuchUser, errWrongPassword, errWrongPassword, nil} {
		err := w.Do(context.Background(), addr, login(outcome))
		wait, _ := ward.RetryAfter(err)
		fmt.Println(err, errors.Is(err, ward.ErrRefused), wait)
		now += 10 * int64(time.Second)
	}
	// Output:
	// no such user false 0s
	// wrong password false 0s
	// wrong password false 0s
	// failurewindow: too many failures (retry in 40s) true 40s
}

// A Core replays a timeline exactly: every instant is an argument, and the table's eviction
// draws come from the roll given to NewCore.
func ExampleCore() {
	sec := int64(time.Second)
	c, _ := failurewindow.NewCore(3, time.Minute, 0, rand.Float64)
	addr := "198.51.100.23"
	for now := int64(0); now < 5*sec; now += sec { // a failed login every second
		if ok, wait := c.Admit(addr, now); !ok {
			fmt.Println(time.Duration(now), "refused, retry in", wait)
			continue
		}
		c.Record(addr, now)
		fmt.Println(time.Duration(now), "failed")
	}
	// Output:
	// 0s failed
	// 1s failed
	// 2s failed
	// 3s refused, retry in 57s
	// 4s refused, retry in 56s
}
