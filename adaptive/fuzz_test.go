package adaptive

import (
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
