package shed

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// differential drives a Core and a Shedder (refresh on every call, every call timed) with the
// same steps decoded from data: (time step, action, cpu). Decisions, flight and capacity match.
func differential(t *testing.T, data []byte) {
	t.Helper()
	now := int64(0)
	cpu := 0
	p := DefaultPolicy()
	core, _ := NewCore(p, now)
	s, _ := New(WithClock(func() int64 { return now }), WithCPU(func() int { return cpu }), WithRefresh(0), WithSampleEvery(1))
	var ct []Ticket
	var sp []Promise
	for i := 0; i+2 < len(data); i += 3 {
		now += (int64(data[i]) - 16) * int64(10*time.Millisecond) // sometimes backwards
		cpu = int(data[i+2]) * 4                                  // 0-1020
		switch a := data[i+1] % 4; {
		case a <= 1 || len(ct) == 0:
			tk, want := core.Allow(now, cpu)
			pr, err := s.Allow()
			if got := err == nil; got != want {
				t.Fatalf("step %d at %d cpu %d: shedder admitted %v, core %v (flying %d, avg %v, capacity %v)",
					i/3, now, cpu, got, want, core.Flying(), core.Average(), core.Capacity(now))
			}
			if want {
				ct, sp = append(ct, tk), append(sp, pr)
			}
		default:
			k := int(data[i]) % len(ct)
			if a == 2 {
				ct[k].Pass(now)
				sp[k].Pass()
			} else {
				ct[k].Fail()
				sp[k].Fail()
			}
			ct, sp = append(ct[:k], ct[k+1:]...), append(sp[:k], sp[k+1:]...)
		}
		if s.flying.load() != core.Flying() || math.Float64frombits(s.avg.Load()) != core.Average() {
			t.Fatalf("step %d: shedder flying %d avg %v, core %d %v", i/3, s.flying.load(), math.Float64frombits(s.avg.Load()), core.Flying(), core.Average())
		}
		if g, w := s.capacityAt(now), core.Capacity(now); g != w {
			t.Fatalf("step %d: capacity %v, core %v", i/3, g, w)
		}
	}
}

func FuzzShedderMatchesCore(f *testing.F) {
	f.Add([]byte{17, 0, 250, 17, 0, 250, 18, 2, 250, 17, 0, 230, 17, 0, 240, 30, 3, 100})
	f.Fuzz(func(t *testing.T, data []byte) { differential(t, data) })
}

func TestShedderMatchesCore(t *testing.T) {
	seed := uint64(3)
	for trial := 0; trial < 100; trial++ {
		data := make([]byte, 3000)
		for i := range data {
			seed = seed*6364136223846793005 + 1442695040888963407
			data[i] = byte(seed >> 56)
		}
		for i := 0; i < len(data); i += 3 {
			data[i] = 16 + data[i]%4 // mostly forward, small steps: many calls per bucket
			if trial%2 == 0 {
				data[i+2] = 200 + data[i+2]%56 // mostly hot
			}
		}
		differential(t, data)
	}
}

func TestAllocs(t *testing.T) {
	cpu := 0
	s, _ := New(WithCPU(func() int { return cpu }), WithSampleEvery(1))
	if a := testing.AllocsPerRun(1000, func() {
		p, _ := s.Allow()
		p.Pass()
		q, _ := s.Allow()
		q.Fail()
	}); a != 0 {
		t.Fatalf("admit + settle allocates %v", a)
	}
	var held []Promise
	for i := 0; i < 1000; i++ {
		p, _ := s.Allow()
		held = append(held, p)
	}
	for i := 0; i < 100; i++ {
		held[i].Fail()
	}
	cpu = 1000
	if _, err := s.Allow(); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("not refusing: %v", err)
	}
	if a := testing.AllocsPerRun(1000, func() { _, _ = s.Allow() }); a != 0 {
		t.Fatalf("a refusal allocates %v", a)
	}
	if snap := s.Snapshot(); !snap.Hot || snap.Refused < 1000 || snap.Flying != 900 || snap.CPU != 1000 {
		t.Fatalf("snapshot %+v", snap)
	}
}

// TestStress: many goroutines against a hot CPU, admitting, refusing and settling at once; flight
// returns to exactly zero.
func TestStress(t *testing.T) {
	s, _ := New(WithCPU(func() int { return 950 }), WithRefresh(time.Millisecond))
	var start, done sync.WaitGroup
	start.Add(1)
	for g := 0; g < 64; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < 500; i++ {
				p, err := s.Allow()
				if err != nil {
					continue
				}
				if i%3 == 0 {
					p.Fail()
				} else {
					p.Pass()
				}
			}
		}()
	}
	start.Done()
	done.Wait()
	if f := s.flying.load(); f != 0 {
		t.Fatalf("flying %d after every promise settled", f)
	}
}
