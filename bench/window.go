package bench

import (
	"time"

	"github.com/zeromicro/go-zero/core/collection"

	uwindow "github.com/wardgo/ward/bench/user/window"
)

// Window is one write into a rolling window of 40 buckets over 10 s, the clock read per write
// (go-zero's RollingWindow reads it inside Add).
var Window = Comparison{
	Name:         "Window",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "Striped.Add with a clock read: pinned per-P stripe, plain add (package user/window)", func() Call {
			return must(uwindow.Striped(40, 10*time.Second))
		}},
		{"gozero", "go-zero collection.RollingWindow.Add: a mutex, time.Since", func() Call {
			w := collection.NewRollingWindow[int64, *collection.Bucket[int64]](
				func() *collection.Bucket[int64] { return new(collection.Bucket[int64]) }, 40, 250*time.Millisecond)
			return func(work func(), _ Outcome) bool { w.Add(1); work(); return true }
		}},
	},
}

// All is every comparison the suite runs.
var All = []*Comparison{&Adaptive, &Breaker, &BreakerRefuse, &Shed, &ShedRefuse, &Rate, &RateBurst, &RateRefuse, &Window,
	&Failures, &FailuresRefuse, &Pool}
