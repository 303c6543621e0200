package adaptive

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzRules feeds every rule arbitrary samples (any RTT, negative and huge included, any in-flight
// count, drops) and draws: no panic, and the limit stays within the rule's bounds.
func FuzzRules(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.5)
	f.Add([]byte{255, 0, 255, 0, 128, 1}, 0.999)
	f.Fuzz(func(t *testing.T, data []byte, roll float64) {
		rolls := func() float64 { return roll }
		a, _ := NewAIMD(DefaultAIMD())
		v, _ := NewVegas(DefaultVegas(), rolls)
		g, _ := NewGradient(DefaultGradient())
		m, _ := NewMinRTT(DefaultMinRTT(), rolls)
		rules := []Rule{a, v, g, m}
		for i := 0; i+2 < len(data); i += 3 {
			s := Sample{
				RTT:      time.Duration(int64(int8(data[i])) * int64(data[i+1]) * int64(time.Millisecond)),
				InFlight: int(data[i+1]) * int(data[i+2]) / 16,
				Dropped:  data[i+2]&7 == 0,
			}
			for _, r := range rules {
				r.Sample(s)
				lo, hi := r.(bounded).bounds()
				if l := r.Limit(); l < lo || l > hi {
					t.Fatalf("%T: Limit() = %d after %+v, outside [%d, %d]", r, l, s, lo, hi)
				}
			}
		}
	})
}

// FuzzRulePolicies builds each rule from arbitrary policy fields (0, negative, NaN, ±Inf and
// MaxInt included) and feeds it arbitrary samples (RTTs and in-flight counts up to the extremes of
// int64): construction either fails with an error naming a field of the rule's policy, or the rule
// starts at Initial, never panics, and its Limit() stays within [Min, Max].
func FuzzRulePolicies(f *testing.F) {
	f.Add(uint8(0), 20, 20, 200, 0.2, 0.9, 1.5, 3, 6, 1, 1, int64(5e9), []byte{10, 20, 30, 40, 50, 60, 70, 80}, 0.5)
	f.Add(uint8(1), 100, 30, 200, 0.5, 0.9, 2.0, 3, 6, 1, 1, int64(1), []byte{10, 20, 30, 40, 20, 1, 255, 255}, 0.5)
	f.Add(uint8(2), math.MaxInt, 1, math.MaxInt, 1.0, 1.0, 1.0, 4, 600, 0, 0, int64(math.MaxInt64), []byte{127, 63, 255, 63, 1, 0, 1, 0}, 0.999)
	f.Add(uint8(3), math.MaxInt, 1, math.MaxInt, 1e-300, 1.0, math.MaxFloat64, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, int64(-1), []byte{128, 63, 255, 127}, math.NaN())
	f.Add(uint8(1), math.MaxInt, math.MaxInt, math.MaxInt, 0.5, math.Inf(1), math.NaN(), math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, int64(0), []byte{1, 1, 1, 1, 1, 62, 255, 126}, math.Inf(-1))
	f.Fuzz(func(t *testing.T, kind uint8, initial, lo, hi int, smoothing, frac, tol float64, a, b, c, d int, timeout int64, data []byte, roll float64) {
		rolls := func() float64 { return roll }
		var r Rule
		var err error
		var name string
		switch kind % 4 {
		case 0:
			name = "AIMD."
			r, err = NewAIMD(AIMD{Initial: initial, Min: lo, Max: hi, Backoff: frac, Timeout: time.Duration(timeout)})
		case 1:
			name = "Vegas."
			r, err = NewVegas(Vegas{Initial: initial, Max: hi, Smoothing: smoothing, Alpha: a, Beta: b, Threshold: c, Step: d, ProbeMultiplier: lo}, rolls)
		case 2:
			name = "Gradient."
			r, err = NewGradient(Gradient{Initial: initial, Min: lo, Max: hi, Smoothing: smoothing, Queue: a, Window: b, Tolerance: tol})
		case 3:
			name = "MinRTT."
			r, err = NewMinRTT(MinRTT{Initial: initial, Min: lo, Max: hi, Smoothing: smoothing, Queue: a, Tolerance: tol, ProbeEvery: b, Backoff: frac}, rolls)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), ": "+name) {
				t.Fatalf("construction error %q does not name a %s field", err, name)
			}
			return
		}
		lo, hi = r.(bounded).bounds()
		// Above 2⁵³ the float64 estimates read Initial to the nearest float64.
		if l := r.Limit(); l != initial && (int64(initial) <= 1<<53 || l < lo || l > hi || int64(max(l-initial, initial-l)) > int64(initial)>>52) {
			t.Fatalf("%T: Limit() = %d before any sample, want Initial %d", r, l, initial)
		}
		for i := 0; i+3 < len(data); i += 4 {
			s := Sample{
				RTT:      time.Duration(int64(int8(data[i])) << (data[i+1] & 63)),
				InFlight: int(data[i+2]) << (data[i+3] & 63),
				Dropped:  data[i+3]&64 != 0,
			}
			r.Sample(s)
			if l := r.Limit(); l < lo || l > hi {
				t.Fatalf("%T: Limit() = %d after %+v, outside [%d, %d]", r, l, s, lo, hi)
			}
		}
	})
}
