package shed

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/procs"
)

// TestFlightExactAcrossGOMAXPROCS: calls admitted and settled on every P while GOMAXPROCS moves
// up and down leave exactly nothing in flight. Built when GOMAXPROCS was 1, the per-P count used
// to give every later P the same row, and plain += lost updates: phantom calls in flight that an
// idle server then refused work for.
func TestFlightExactAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s, err := New(WithCPU(func() int { return 0 })) // never hot: every call admitted
	if err != nil {
		t.Fatal(err)
	}
	stop := procs.Flip()
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				p, err := s.Allow()
				if err != nil {
					t.Error("refused at a cool CPU")
					return
				}
				if i%5 == 0 {
					runtime.Gosched() // settle on another P, sometimes
				}
				if i%2 == 0 {
					p.Pass()
				} else {
					p.Fail()
				}
			}
		}()
	}
	wg.Wait()
	stop()
	if got := s.Snapshot().Flying; got != 0 {
		t.Fatalf("Flying = %d with nothing running, want 0", got)
	}
}

// TestRefusingShedderCools: a shedder that refused while hot and full, then sees a cool CPU and
// no call get through, must stop refusing once the cool-down has passed, as the Core does. Its
// refusals used to decide on the last timed call's clock reading, which never moved once every
// call was refused: an idle, cool server refused every call for good.
func TestRefusingShedderCools(t *testing.T) {
	now, cpu := int64(0), 0
	s, err := New(WithClock(func() int64 { return now }), WithCPU(func() int { return cpu }), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	// the first bucket: 100 passes of 50 ms each, a capacity of 50 calls in flight
	var ps []Promise
	for i := 0; i < 100; i++ {
		p, _ := s.Allow()
		ps = append(ps, p)
	}
	now = 50 * ms
	for i := range ps {
		ps[i].Pass()
	}
	now = 100 * ms
	ps = ps[:0]
	for i := 0; i < 200; i++ { // 200 in flight, held there
		p, _ := s.Allow()
		ps = append(ps, p)
	}
	for i := 0; i < 20; i++ {
		ps[i].Fail()
	}
	now, cpu = 150*ms, 900
	refused := 0
	for i := 0; i < 10; i++ {
		if _, err := s.Allow(); err != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("setup: hot and 180 in flight over a capacity of 50, yet nothing refused")
	}
	// The CPU cools and time moves on, a call every 100 ms; nothing settles, nothing is timed. The
	// calls inside the cool-down are refused; past it, at most the 7 refusals a P may decide on the
	// instant a burst ended with (clock.Refusals), then none.
	cpu = 300
	late := 0
	for at := 149 * ms; at < 10*int64(time.Second); at += 100 * ms {
		now = at
		_, err := s.Allow()
		cooling := at-150*ms < int64(s.p.Cool)
		if cooling && err == nil {
			t.Fatalf("admitted at %v, inside the cool-down after refusing at 150ms", time.Duration(at))
		}
		if !cooling && err != nil {
			late++
		}
	}
	if late > 7 {
		t.Fatalf("%d calls refused past the cool-down by a cool server, want at most 7", late)
	}
	for i := 0; i < 100; i++ {
		if _, err := s.Allow(); err != nil {
			t.Fatalf("call %d refused by a cool server past its cool-down", i)
		}
	}
}
