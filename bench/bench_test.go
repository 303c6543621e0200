package bench

import (
	"testing"
)

// run benchmarks every implementation of c doing work inside the admitted section.
func run(b *testing.B, c *Comparison, work func()) {
	for _, impl := range c.Impls {
		b.Run("impl="+impl.Name, func(b *testing.B) {
			call := impl.New()
			if c.Prepare != nil {
				defer c.Prepare(call)()
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					call(work, c.Outcome)
				}
			})
		})
	}
}

// both runs c with no work and with a short spin in the admitted section.
func both(b *testing.B, c *Comparison) {
	b.Run("work=none", func(b *testing.B) { run(b, c, None) })
	b.Run("work=spin", func(b *testing.B) { run(b, c, Spin) })
}

func BenchmarkAdaptive(b *testing.B)      { both(b, &Adaptive) }
func BenchmarkBreaker(b *testing.B)       { both(b, &Breaker) }
func BenchmarkBreakerRefuse(b *testing.B) { run(b, &BreakerRefuse, None) }
func BenchmarkShed(b *testing.B)          { both(b, &Shed) }
func BenchmarkShedRefuse(b *testing.B)    { run(b, &ShedRefuse, None) }
func BenchmarkRate(b *testing.B)          { both(b, &Rate) }
func BenchmarkRateBurst(b *testing.B)     { both(b, &RateBurst) }
func BenchmarkRateRefuse(b *testing.B)    { run(b, &RateRefuse, None) }
func BenchmarkWindow(b *testing.B)        { run(b, &Window, None) }

// TestScenarios is the quick mode `make test` runs: every implementation of every comparison
// admits or refuses as its scenario says, so no comparison measures a path it does not mean to.
// No timing is asserted.
func TestScenarios(t *testing.T) {
	for _, c := range All {
		for _, impl := range c.Impls {
			t.Run(c.Name+"/"+impl.Name, func(t *testing.T) {
				call := impl.New()
				if c.Prepare != nil {
					defer c.Prepare(call)()
				}
				const n = 200
				admitted, worked := 0, 0
				for i := 0; i < n; i++ {
					if call(func() { worked++ }, c.Outcome) {
						admitted++
					}
				}
				if worked != admitted {
					t.Fatalf("%d admitted but the work ran %d times", admitted, worked)
				}
				share := float64(admitted) / n
				if c.WantAdmitted == 1 && admitted != n {
					t.Fatalf("%d of %d admitted, want all", admitted, n)
				}
				if c.WantAdmitted == 0 && share > 0.1 {
					t.Fatalf("%d of %d admitted, want (nearly) none", admitted, n)
				}
			})
		}
	}
	Spin()
}

// TestNames checks that implementation names are unique and benchstat-friendly, and ward is
// first (benchstat compares every column against the first).
func TestNames(t *testing.T) {
	for _, c := range All {
		seen := map[string]bool{}
		if c.Impls[0].Name != "ward" {
			t.Errorf("%s: first implementation %q, want ward", c.Name, c.Impls[0].Name)
		}
		for _, impl := range c.Impls {
			if seen[impl.Name] || impl.Note == "" {
				t.Errorf("%s: %q repeated or without a note", c.Name, impl.Name)
			}
			seen[impl.Name] = true
		}
	}
}
