package shed

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// schedstatFixture is a /proc/self/task of two threads with the given run and wait nanoseconds.
func schedstatFixture(t *testing.T, root string, threads map[string][2]int64) {
	t.Helper()
	for tid, rw := range threads {
		write(t, root, "proc/self/task/"+tid+"/schedstat", fmt.Sprintf("%d %d 42\n", rw[0], rw[1]))
	}
}

// TestCPUQueued: with Queued the process's own reading is its threads' run and run-queue time over
// the wall time and GOMAXPROCS; a thread that ended takes its time with it and that interval is
// skipped; without Queued (go-zero's sampler) the same machine reads utime + stime.
func TestCPUQueued(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	root := fixture(t, map[string]string{"proc/self/stat": statLine(0, 0)})
	schedstatFixture(t, root, map[string][2]int64{"100": {0, 0}, "101": {0, 0}})
	p := GoZeroCPUPolicy()
	p.Queued = true
	c, now := samplerWith(root, p)
	if c.Source() != "schedstat" {
		t.Fatalf("source %q, want schedstat", c.Source())
	}
	if z, _ := samplerWith(root, GoZeroCPUPolicy()); z.Source() != "procself" {
		t.Fatalf("without Queued: source %q, want procself", z.Source())
	}
	ms := int64(time.Millisecond)
	c.sample()
	for i, st := range []struct {
		threads map[string][2]int64 // cumulative run and wait ns by thread
		want    int64
	}{
		// 1 s of wall: 300 ms ran and 600 ms waited on thread 100, 50 + 50 ms on 101: 1000 ms
		{map[string][2]int64{"100": {300 * ms, 600 * ms}, "101": {50 * ms, 50 * ms}}, 1000},
		// 100 + 100 ms more: 200 thousandths, averaged by Beta 0.95 with the 1000 before
		{map[string][2]int64{"100": {400 * ms, 700 * ms}, "101": {50 * ms, 50 * ms}}, 960},
		// thread 100 ended: the sum fell, the interval is skipped
		{map[string][2]int64{"101": {60 * ms, 50 * ms}}, 960},
		// from there 990 ms of 1 s: 990 × 0.05 + 960 × 0.95 = 961.5
		{map[string][2]int64{"101": {600 * ms, 500 * ms}}, 962},
	} {
		*now += int64(time.Second)
		if err := removeTasks(root); err != nil {
			t.Fatal(err)
		}
		schedstatFixture(t, root, st.threads)
		c.sample()
		if got := c.value.Load(); got != st.want {
			t.Fatalf("step %d: value %d, want %d", i, got, st.want)
		}
	}
}

// TestCPUQueuedBadStat: a schedstat the sampler cannot parse is no reading; detect then falls
// back to the process's own time.
func TestCPUQueuedBadStat(t *testing.T) {
	root := fixture(t, map[string]string{
		"proc/self/stat":               statLine(0, 0),
		"proc/self/task/100/schedstat": "garbage\n",
	})
	p := DefaultCPUPolicy()
	c, _ := samplerWith(root, p)
	if c.Source() != "procself" {
		t.Fatalf("source %q, want procself", c.Source())
	}
}

// TestCPUPoll: a reading is taken by the first poll at or after the due instant, which moves the
// due instant one interval on along the grid of due instants, however late the poll (a tick woken
// later than the one before still reads); a poll before it takes nothing.
func TestCPUPoll(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	root := fixture(t, map[string]string{"proc/self/stat": statLine(0, 0)})
	p := GoZeroCPUPolicy()
	p.Every = 250 * time.Millisecond
	now := int64(0)
	c := newCPU(root, p, func() int64 { return now })
	c.due.Store(int64(p.Every))
	c.poll(0) // not due
	if c.have {
		t.Fatal("a reading before it was due")
	}
	for i, st := range []struct {
		at   time.Duration
		tick int // utime at that instant
		want int64
		due  time.Duration
	}{
		{250 * time.Millisecond, 0, -1, 500 * time.Millisecond},     // the first reading: no value yet
		{400 * time.Millisecond, 100, -1, 500 * time.Millisecond},   // not due: nothing read
		{600 * time.Millisecond, 20, 571, 750 * time.Millisecond},   // 200 ms of CPU over 350 ms
		{749 * time.Millisecond, 1000, 571, 750 * time.Millisecond}, // not due
		{755 * time.Millisecond, 35, 591, time.Second},              // 5 ms late after 100 ms late: read (150 ms of CPU over 155 ms)
		{1800 * time.Millisecond, 35, 562, 2 * time.Second},         // three intervals late: read, due at the grid's next instant
		{1999 * time.Millisecond, 1000, 562, 2 * time.Second},       // not due
	} {
		now = int64(st.at)
		write(t, root, "proc/self/stat", statLine(st.tick, 0))
		c.poll(now)
		if got := c.value.Load(); got != st.want {
			t.Fatalf("step %d: value %d, want %d", i, got, st.want)
		}
		if got := time.Duration(c.due.Load()); got != st.due {
			t.Fatalf("step %d: due %v, want %v", i, got, st.due)
		}
	}
}

// TestShedderPollsItsSampler: a shedder on ward's clock with the sampler New made takes a due
// reading from a timed admission; one given a clock of its own leaves its sampler to the
// goroutine, since the two clocks' instants do not compare.
func TestShedderPollsItsSampler(t *testing.T) {
	s, err := New(WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	if s.poll != s.sampler || s.poll == nil {
		t.Fatal("the shedder does not poll its own sampler")
	}
	defer s.sampler.Stop() // New's sampler, which s.cpu still reads: Allow starts its goroutine
	root := fixture(t, map[string]string{"proc/self/stat": statLine(0, 0)})
	c := newCPU(root, GoZeroCPUPolicy(), s.clock)
	s.poll, s.sampler = c, c
	c.due.Store(0) // due: the next timed admission takes a reading
	p, _ := s.Allow()
	p.Pass()
	if !c.have {
		t.Fatal("a due reading was not taken by the timed admission")
	}
	if c.due.Load() <= 0 {
		t.Fatal("the due instant did not move on")
	}
	if c.state.Load() != 0 {
		t.Fatal("the sampler's goroutine started: WithCPU is not in use, so nothing should read it")
	}

	own, err := New(WithClock(func() int64 { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	if own.poll != nil {
		t.Fatal("a shedder with its own clock polls a sampler on ward's clock")
	}
	if withCPU, _ := New(WithCPU(func() int { return 0 })); withCPU.poll != nil || withCPU.sampler != nil {
		t.Fatal("a shedder given WithCPU polls a sampler")
	}
}

// TestHotAdmissionYields: with one P, a call a hot shedder admits lets a goroutine already
// waiting for the P run before Allow returns; a cool shedder's call does not.
//
// The yield puts the caller on the global run queue, which the scheduler serves before the P's
// own queue on one schedule in 61, so one hot call in about 61 runs before the goroutine waiting:
// the hot case is tried up to 20 times and must see the waiting goroutine run first once (all 20
// missing it by chance: under 61^-20, about 2e-36). Without the yield it never runs first.
func TestHotAdmissionYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		cpu       int
		wantYield bool
	}{{950, true}, {100, false}} {
		cpu := c.cpu
		s, err := New(WithCPU(func() int { return cpu }), WithClock(func() int64 { return 0 }))
		if err != nil {
			t.Fatal(err)
		}
		tries := 1
		if c.wantYield {
			tries = 20
		}
		yielded := false
		for try := 0; try < tries && !yielded; try++ {
			ran := make(chan struct{})
			var waiting atomic.Bool
			go func() { waiting.Store(true); close(ran) }() // runnable, waiting for the one P
			p, err := s.Allow()
			yielded = waiting.Load()
			<-ran
			if err != nil {
				t.Fatalf("cpu %d: refused: %v (nothing is in flight)", cpu, err)
			}
			p.Pass()
		}
		if yielded != c.wantYield {
			t.Errorf("cpu %d: the waiting goroutine ran before Allow returned (in %d tries): %v, want %v", cpu, tries, yielded, c.wantYield)
		}
	}
}

// removeTasks removes the fixture's threads, so a step can list the ones still alive.
func removeTasks(root string) error { return os.RemoveAll(filepath.Join(root, "proc/self/task")) }

// TestHotTimedFromAfterTheYield: a call admitted while the server is hot is timed from when it runs
// again after its yield, with WithRefresh(0) too (where the clock is read on every call): its start
// is the clock's last reading, not Allow's first.
func TestHotTimedFromAfterTheYield(t *testing.T) {
	for _, refresh := range []time.Duration{0, time.Millisecond} {
		now, reads := int64(0), 0
		s, err := New(WithCPU(func() int { return 1000 }), WithSampleEvery(1), WithRefresh(refresh),
			WithClock(func() int64 { reads++; now += int64(time.Millisecond); return now }))
		if err != nil {
			t.Fatal(err)
		}
		first := reads
		p, err := s.Allow()
		if err != nil {
			t.Fatalf("refresh %v: a hot server with nothing in flight refused: %v", refresh, err)
		}
		if !p.timed || p.start != now || reads < first+1 {
			t.Fatalf("refresh %v: timed %v, start %d after %d reads; want timed from the last reading %d", refresh, p.timed, p.start, reads-first, now)
		}
		if refresh == 0 && reads < first+2 {
			t.Fatalf("refresh 0: %d clock reads for a hot timed admission, want Allow's and one after the yield", reads-first)
		}
		p.Pass()
	}
}
