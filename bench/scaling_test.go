package bench

import (
	"runtime"
	"testing"
)

// Scaling is the admission paths whose cost per core should not grow with the cores, each beside
// the anchor that keeps one shared word: run it at -cpu 1,2,4,8,16 (make bench-scaling). A path
// that scales keeps its calls/s/core as -cpu grows (its ns/op, the wall time per call of all
// goroutines together, falls as 1/cores); one shared word makes calls/s/core fall instead.
var Scaling = []struct {
	Path string
	C    *Comparison
	Impl []string
}{
	{"adaptive", &Adaptive, []string{"ward", "semaphore"}},
	{"rate", &Rate, []string{"ward", "uber-ratelimit", "x-time-rate"}},
	{"rate-burst", &RateBurst, []string{"ward", "uber-ratelimit", "x-time-rate"}},
	{"rate-refuse", &RateRefuse, []string{"ward", "x-time-rate"}},
	{"breaker", &Breaker, []string{"ward"}},
	{"window", &Window, []string{"ward", "gozero"}},
}

// impl returns the implementation of c named name; it panics if there is none, which the quick
// test catches.
func impl(c *Comparison, name string) Impl {
	for _, i := range c.Impls {
		if i.Name == name {
			return i
		}
	}
	panic("bench: no implementation " + name + " in " + c.Name)
}

// BenchmarkScaling runs every Scaling path with no work in the admitted section and reports, with
// ns/op, the calls each core completes a second (calls/s/core: b.N over the elapsed time over
// the cores that ran them, GOMAXPROCS or the machine's CPUs when fewer: on a 2-core machine
// -cpu 16 is 16 goroutines sharing 2 cores).
func BenchmarkScaling(b *testing.B) {
	for _, s := range Scaling {
		for _, name := range s.Impl {
			b.Run("path="+s.Path+"/impl="+name, func(b *testing.B) {
				call := impl(s.C, name).New()
				if s.C.Prepare != nil {
					defer s.C.Prepare(call)()
				}
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call(None, s.C.Outcome)
					}
				})
				if sec := b.Elapsed().Seconds(); sec > 0 {
					b.ReportMetric(float64(b.N)/sec/float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU())), "calls/s/core")
				}
			})
		}
	}
}
