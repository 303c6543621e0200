package shed

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/procs"
	"github.com/wardgo/ward/internal/stripe"
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
	if got := s.Snapshot().InFlight; got != 0 {
		t.Fatalf("InFlight = %d with nothing running, want 0", got)
	}
}

// TestRefusingShedderCools: a shedder that refused while hot and full, then sees a cool CPU and
// no call get through, must stop refusing once the cool-down has passed, as the Core does. Its
// refusals used to decide on the last timed call's clock reading, which never moved once every
// call was refused: an idle, cool server refused every call for good.
func TestRefusingShedderCools(t *testing.T) {
	s, now, cpu, _ := overloaded(t)
	// The CPU cools and time moves on, a call every 100 ms; nothing settles, nothing is timed. The
	// calls inside the cool-down are refused; past it, at most the 7 refusals a P may decide on the
	// instant a burst ended with (clock.Refusals), then none.
	*cpu = 300
	late := 0
	for at := 149 * ms; at < 10*int64(time.Second); at += 100 * ms {
		*now = at
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

// TestClockJumpsFarAndBack: a Shedder has no …At forms (every instant comes from its clock), so
// the clock itself jumps: to a Unix time (years past ward's monotonic origin) and back. A hot,
// full server refuses at both origins (the jump does not open it), and once the CPU cools it
// admits again within Cool of the jump back (the far-future hot reading does not keep it cooling
// for years). Before the rule that pulls such state back to the clock, it refused every call after
// the jump back.
func TestClockJumpsFarAndBack(t *testing.T) {
	const ms = int64(time.Millisecond)
	future := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, exact := range []bool{true, false} {
		now, cpu := int64(0), 300
		opts := []Option{WithClock(func() int64 { return now }), WithCPU(func() int { return cpu })}
		if exact {
			opts = append(opts, WithRefresh(0), WithSampleEvery(1))
		}
		s, err := New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		// a second of traffic: 50 ms calls, 20 a bucket, so the window shows a capacity of 10
		for i := int64(0); i < 200; i++ {
			now = i * 5 * ms
			p, _ := s.Allow()
			now += 50 * ms
			p.Pass()
		}
		var held []Promise // 40 calls stuck in flight: full
		for i := 0; i < 40; i++ {
			p, _ := s.Allow()
			held = append(held, p)
		}
		// try makes calls 1 ms apart from start, each settled at once, and returns the share refused
		try := func(start int64, calls int) float64 {
			refused := 0
			for i := 0; i < calls; i++ {
				now = start + int64(i)*ms
				if p, err := s.Allow(); err != nil {
					refused++
				} else {
					p.Fail()
				}
			}
			return float64(refused) / float64(calls)
		}
		check := func(what string, got, lo, hi float64) {
			t.Helper()
			if got < lo || got > hi {
				t.Fatalf("exact %v: %s: refused %.2f of calls, want within [%.2f, %.2f]", exact, what, got, lo, hi)
			}
		}
		cpu = 950
		check("hot and full at the origin", try(1100*ms, 200), 0.8, 1)
		check("hot and full at the far-future instant", try(future, 200), 0.8, 1)
		cpu = 300
		try(2000*ms, 1000) // back, and cool: a second to cool off after the far-future refusals
		check("cool after the jump back", try(3000*ms, 500), 0, 0)
		cpu = 950
		check("hot again after the jump back", try(4000*ms, 200), 0.8, 1)
		for i := range held {
			held[i].Ignore()
		}
		if n := s.Snapshot().InFlight; n != 0 {
			t.Fatalf("exact %v: %d in flight at the end", exact, n)
		}
	}
}

// TestLayout: the average every timed settle moves starts one cache line in, each group of fields
// fills whole lines, and so does the Shedder; the pads are sized from unsafe.Sizeof, so this holds
// on 32-bit targets too (make test-arm64 runs it under GOARCH=arm).
func TestLayout(t *testing.T) {
	line := uintptr(stripe.CacheLine)
	var s Shedder
	if off := unsafe.Offsetof(s.shedderAvg); off != line {
		t.Errorf("shedderAvg at offset %d, want %d", off, line)
	}
	for name, off := range map[string]uintptr{
		"shedderShared": unsafe.Offsetof(s.shedderShared),
		"shedderCold":   unsafe.Offsetof(s.shedderCold),
		"sizeof":        unsafe.Sizeof(s),
	} {
		if off%line != 0 {
			t.Errorf("%s = %d, not a whole number of %d-byte lines", name, off, line)
		}
	}
}
