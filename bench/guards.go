package bench

import (
	"context"
	"time"

	"github.com/wardgo/ward/failurewindow"
)

// failureKey is the key the Failures scenarios judge: an address with failures on record.
const failureKey = "203.0.113.7"

// wardFailures is failurewindow.Window.Admit of failureKey, recorded failures times first: the
// request goes ahead (and does the work) when admitted.
func wardFailures(failures int) func() Call {
	return func() Call {
		w, err := failurewindow.New(4, time.Hour)
		if err != nil {
			panic(err)
		}
		for range failures {
			w.Record(failureKey)
		}
		return func(work func(), _ Outcome) bool {
			if ok, _ := w.Admit(failureKey); !ok {
				return false
			}
			work()
			return true
		}
	}
}

// Failures is a request from a known key below its limit of failures: admitted.
var Failures = Comparison{
	Name:         "Failures",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "failurewindow.Window.Admit, a key with 2 of its 4 failures: a hash, a lock-free lookup, a clock read", wardFailures(2)},
	},
}

// FailuresRefuse is a request from a key at its limit of failures: refused.
var FailuresRefuse = Comparison{
	Name:         "FailuresRefuse",
	WantAdmitted: 0,
	Impls: []Impl{
		{"ward", "failurewindow.Window.Admit, a key at its limit: a hash, a lock-free lookup, a clock read", wardFailures(4)},
	},
}

// Pool is a loan of an idle resource: Acquire, the work, Release.
var Pool = Comparison{
	Name:         "Pool",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "pool.Pool Acquire of an idle resource and its Release, size 8 (package user/pool)", poolCall("ward")},
		{"puddle", "jackc/puddle/v2 Acquire and Release, size 8", poolCall("puddle")},
	},
}

// poolCall is the Call of the pool named, of size 8; the pool stays open for the process.
func poolCall(name string) func() Call {
	return func() Call {
		borrow, _ := PoolImpls(8)[name]()
		ctx := context.Background()
		return func(work func(), _ Outcome) bool { return borrow(ctx, work) == nil }
	}
}
