package bench

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	ufailurewindow "github.com/wardgo/ward/bench/user/failurewindow"
)

// failureKey is the key the Failures scenarios judge: an address with failures on record.
const failureKey = "203.0.113.7"

// wardFailures is failurewindow.Window.Admit of failureKey, recorded failures times first, as a
// user's package calls it (package user/failurewindow): the request goes ahead (and does the work)
// when admitted.
func wardFailures(failures int) func() Call {
	return func() Call { return must(ufailurewindow.Failing(failureKey, 4, failures, time.Hour)) }
}

// keyStamps is what a lock-free Admit reads of a key: whether it is at its limit, its oldest
// stamp (what the MapOf rows here and BenchmarkKeyLookup keep in their maps).
type keyStamps struct {
	full atomic.Bool
	head atomic.Int64
}

// admits is the decision Admit makes from keyStamps: under the limit, or the oldest stamp out.
func (s *keyStamps) admits(now, window int64) bool {
	return !s.full.Load() || now-s.head.Load() >= window
}

// mapofFailures is the same admission on xsync's MapOf: failureKey's stamps in the map (at its
// limit when full, its oldest stamp now), a Load, a clock read and the decision.
func mapofFailures(full bool) func() Call {
	return func() Call { return mapofCall(full) }
}

// mapofCall builds mapofFailures' call in a function of its own, so the compiler inlines into it
// what it would inline in a user's small function (a closure built in a large package init gets a
// smaller inlining budget), as the ward row's call gets in package user/failurewindow.
func mapofCall(full bool) Call {
	const window = int64(time.Hour)
	m := xsync.NewMapOf[string, *keyStamps]()
	s := new(keyStamps)
	s.full.Store(full)
	s.head.Store(nowNano())
	m.Store(strings.Clone(failureKey), s) // the map holds its own copy, as the Window does
	return func(work func(), _ Outcome) bool {
		if s, ok := m.Load(failureKey); ok && !s.admits(nowNano(), window) {
			return false
		}
		work()
		return true
	}
}

// Failures is a request from a known key below its limit of failures: admitted.
var Failures = Comparison{
	Name:         "Failures",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "failurewindow.Window.Admit, a key with 2 of its 4 failures: a hash, a lock-free lookup, a clock read", wardFailures(2)},
		{"xsync-mapof", "the same decision on xsync MapOf: a Load of the key's stamps, a clock read", mapofFailures(false)},
	},
}

// FailuresRefuse is a request from a key at its limit of failures: refused.
var FailuresRefuse = Comparison{
	Name:         "FailuresRefuse",
	WantAdmitted: 0,
	Impls: []Impl{
		{"ward", "failurewindow.Window.Admit, a key at its limit: a hash, a lock-free lookup, a clock read", wardFailures(4)},
		{"xsync-mapof", "the same decision on xsync MapOf, the key at its limit: a Load of its stamps, a clock read", mapofFailures(true)},
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
