package failurewindow

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

const sec = int64(time.Second)

func newWindow(t *testing.T, limit int, window time.Duration) *Window {
	t.Helper()
	w, err := New(limit, window, WithClock(func() int64 { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		limit  int
		window time.Duration
		opts   []Option
		want   string
	}{
		{0, time.Minute, nil, "limit = 0"},
		{-1, time.Minute, nil, "limit = -1"},
		{MaxStoredFailures + 1, time.Minute, nil, "MaxStoredFailures"},
		{5, 0, nil, "window = 0s"},
		{5, -time.Second, nil, "window = -1s"},
		{5, time.Minute, []Option{WithClock(nil)}, "WithClock = nil"},
		{5, time.Minute, []Option{WithOwnError(nil)}, "WithOwnError = nil"},
		{5, time.Minute, []Option{WithFailure(nil)}, "WithFailure = nil"},
		{5, time.Minute, []Option{WithClock(func() int64 { return 0 }), nil}, "option 1 = nil"},
	} {
		_, err := New(c.limit, c.window, c.opts...)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%d, %v): %v, want an error saying %q", c.limit, c.window, err, c.want)
		}
	}
	if _, err := New(MaxStoredFailures, time.Nanosecond); err != nil {
		t.Errorf("the largest limit is rejected: %v", err)
	}
}

type step struct {
	at     int64
	record bool
	ok     bool
	retry  time.Duration
}

func trace(t *testing.T, w *Window, key string, steps []step) {
	t.Helper()
	traceCalls(t, w.AdmitAt, w.RecordAt, key, steps)
}

// traceCalls runs steps: a record step counts a failure at its instant, any other step checks
// admit's answer.
func traceCalls(t *testing.T, admit func(string, int64) (bool, time.Duration), record func(string, int64), key string, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.record {
			record(key, s.at)
			continue
		}
		ok, retry := admit(key, s.at)
		if ok != s.ok || retry != s.retry {
			t.Fatalf("step %d: admit(%q, %v) = %v, %v; want %v, %v", i, key, time.Duration(s.at), ok, retry, s.ok, s.retry)
		}
	}
}

// TestBoundary: a failure is in the window while less than the window has passed; exactly a
// window later it is out. A refused key is told the wait until limit − 1 remain.
func TestBoundary(t *testing.T) {
	w := newWindow(t, 3, 10*time.Second)
	trace(t, w, "10.0.0.1", boundarySteps)
	if s := w.Snapshot(); s.Stored != 3 || s.Keys != 1 {
		t.Fatalf("snapshot %+v, want 3 stamps of one key", s)
	}
}

// TestClockBackwards: a failure recorded at an earlier instant than the key's newest stamp, by up
// to a window (instants read out of order), is stamped at the newest and nothing is pulled back;
// the wait is held to (0, window].
func TestClockBackwards(t *testing.T) {
	w := newWindow(t, 2, 10*time.Second)
	trace(t, w, "k", backwardsSteps)
}

// TestPullBack: stamps more than a window later than the instant of a call that reads them (a
// clock that jumped back, or another origin) are pulled back to that instant: the key is refused
// for exactly one more window of the clock in use, never longer (no wedge) and never shorter (no
// failure dropped).
func TestPullBack(t *testing.T) {
	w := newWindow(t, 2, 10*time.Second)
	trace(t, w, "k", pullBackSteps)
	if s := w.Snapshot(); s.Stored != 2 || s.Keys != 1 {
		t.Fatalf("snapshot %+v, want the two stamps of one key", s)
	}
}

// TestMixedOrigins: failures recorded with Unix nanoseconds, judged on the Window's clock near 0,
// neither wedge the key (refused "for decades" with a retry in a minute) nor let it pass early:
// it is refused for one window from the first call that sees them, with a wait never over the
// window, and then passes.
func TestMixedOrigins(t *testing.T) {
	unix := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	now := 5 * sec
	w, err := New(3, time.Minute, WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		w.RecordAt("addr", unix+i*sec)
	}
	w.RecordAt("other", unix)
	if ok, retry := w.Admit("addr"); ok || retry != time.Minute {
		t.Fatalf("at the limit, Unix stamps: Admit = %v, %v; want refused for a minute", ok, retry)
	}
	for _, c := range []struct {
		at    int64
		ok    bool
		retry time.Duration
	}{
		{30 * sec, false, 35 * time.Second}, // a window from 5 s, the call that saw them
		{65*sec - 1, false, 1},
		{65 * sec, true, 0},
		{65 * sec * 1000, true, 0},
	} {
		now = c.at
		if ok, retry := w.Admit("addr"); ok != c.ok || retry != c.retry {
			t.Fatalf("Admit at %v = %v, %v; want %v, %v", time.Duration(c.at), ok, retry, c.ok, c.retry)
		}
	}
	// a key at its limit with Unix stamps, counted once more on the clock: still refused a window
	now = 70 * sec
	w.RecordAt("third", unix)
	w.RecordAt("third", unix)
	w.RecordAt("third", unix)
	w.Record("third")
	if ok, retry := w.Admit("third"); ok || retry != time.Minute {
		t.Fatalf("a fourth failure on the clock: Admit = %v, %v; want refused for a minute", ok, retry)
	}
	// the sweep on the clock reclaims what the Unix stamps held, a window later
	now = 70*sec + int64(time.Minute)
	w.Sweep()
	if n := w.Len(); n != 0 {
		t.Fatalf("Len = %d after a window of the clock, want 0", n)
	}
	// and a Unix instant passed to AdmitAt reads as the clock jumping ahead for that call only: it
	// admits, and writes nothing that lets the key pass on the clock
	w.Record("fresh")
	w.Record("fresh")
	w.Record("fresh")
	if ok, _ := w.AdmitAt("fresh", unix); !ok {
		t.Fatal("AdmitAt decades after the failures refuses")
	}
	if ok, retry := w.Admit("fresh"); ok || retry != time.Minute {
		t.Fatalf("after an AdmitAt with a Unix instant: Admit = %v, %v; want refused for a minute", ok, retry)
	}
}

// TestSweepPulledBack: a Record at a Unix instant does not sweep at that instant (the sweep
// runs on the Window's own clock); the sweeps on the clock pull the Unix stamps back, and a
// window later they are reclaimed.
func TestSweepPulledBack(t *testing.T) {
	now := int64(0)
	w, _ := New(2, 10*time.Second, WithClock(func() int64 { return now }))
	unix := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	w.RecordAt("unix", unix)
	if got := w.lastSweep.Load(); got != 0 {
		t.Fatalf("last sweep at %d after a Record at a Unix instant, want 0 (none since New)", got)
	}
	for i := 0; i < 50; i++ {
		w.Record(fmt.Sprint("a", i))
	}
	now = 20 * sec
	w.Record("b") // a window since the last sweep: the a keys go, unix is pulled back to 20 s
	if s := w.Snapshot(); s.Keys != 2 || s.Stored != 2 || w.lastSweep.Load() != now {
		t.Fatalf("after the sweep at 20 s %+v (last sweep %d), want b and unix", s, w.lastSweep.Load())
	}
	now = 40 * sec
	w.Record("c")
	if s := w.Snapshot(); s.Keys != 1 || s.Stored != 1 {
		t.Fatalf("after the sweep at 40 s %+v, want only c", s)
	}
}

// TestExtremeInstants: instants at the ends of int64 neither wrap into "in the window" nor into
// "expired".
func TestExtremeInstants(t *testing.T) {
	w := newWindow(t, 1, time.Minute)
	trace(t, w, "k", extremeSteps)
}

func TestEmptyAndLongKeys(t *testing.T) {
	w := newWindow(t, 1, time.Minute)
	w.RecordAt("", 0)
	if ok, _ := w.AdmitAt("", 1); ok {
		t.Fatal("the empty key is not counted")
	}
	long := strings.Repeat("x", 10*MaxKeyLen)
	other := long[:len(long)-1] + "y"
	w.RecordAt(long, 0)
	if ok, retry := w.AdmitAt(long, sec); ok || retry != 59*time.Second {
		t.Fatalf("a long key: %v %v", ok, retry)
	}
	if ok, _ := w.AdmitAt(other, sec); !ok {
		t.Fatal("two long keys differing in the last byte collide")
	}
	if ok, _ := w.AdmitAt(long[:MaxKeyLen], sec); !ok {
		t.Fatal("a long key's prefix is counted as the key")
	}
	if w.Len() != 2 {
		t.Fatalf("Len = %d, want 2", w.Len())
	}
}

// TestKeysAreCopied: the stored key does not alias the caller's buffer.
func TestKeysAreCopied(t *testing.T) {
	w := newWindow(t, 1, time.Minute)
	buf := []byte("192.0.2.7")
	key := unsafeString(buf)
	w.RecordAt(key, 0)
	copy(buf, "000000000")
	if ok, _ := w.AdmitAt("192.0.2.7", 0); ok {
		t.Fatal("the stored key changed with the caller's buffer")
	}
}

// TestOneKeyManyGoroutines: the count on one key is exact up to the limit.
func TestOneKeyManyGoroutines(t *testing.T) {
	w := newWindow(t, 1000, time.Minute)
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 19; i++ {
				w.RecordAt("hot", 0)
			}
		}()
	}
	wg.Wait()
	if s := w.Snapshot(); s.Stored != 950 {
		t.Fatalf("stored %d, want exactly 950", s.Stored)
	}
	if ok, _ := w.AdmitAt("hot", 0); !ok {
		t.Fatal("refused at 950 of 1000")
	}
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.RecordAt("hot", 0)
			w.RecordAt("hot", 0)
		}()
	}
	wg.Wait()
	if s := w.Snapshot(); s.Stored != 1000 {
		t.Fatalf("stored %d after passing the limit, want 1000", s.Stored)
	}
	if ok, retry := w.AdmitAt("hot", sec); ok || retry != 59*time.Second {
		t.Fatalf("at the limit: %v %v", ok, retry)
	}
}

func TestSweep(t *testing.T) {
	now := int64(0)
	w, _ := New(2, 10*time.Second, WithClock(func() int64 { return now }))
	for i := 0; i < 100; i++ {
		w.Record(fmt.Sprint("a", i))
	}
	now = 10 * sec
	w.Record("b") // a window since the last sweep: this record sweeps first
	if s := w.Snapshot(); s.Keys != 1 || s.Stored != 1 {
		t.Fatalf("after the sweep %+v, want only b", s)
	}
	now = 25 * sec
	w.Sweep()
	if w.Len() != 0 {
		t.Fatalf("Len = %d after everything expired", w.Len())
	}
}

// TestEvictionSparesKeysAtLimit: a full table evicts keys below the limit, never at it; when every
// probed key is at the limit the failure is not counted, and says so.
func TestEvictionSparesKeysAtLimit(t *testing.T) {
	w := newWindow(t, 2, time.Hour)
	w.max = 64
	for i := 0; i < 32; i++ { // fills the table: 32 keys at the limit
		w.RecordAt(fmt.Sprint("bad", i), 0)
		w.RecordAt(fmt.Sprint("bad", i), 0)
	}
	w.RecordAt("newcomer", 0)
	if s := w.Snapshot(); s.Uncounted != 1 || s.Evictions != 0 || s.Stored != 64 {
		t.Fatalf("a table of keys at the limit: %+v, want the newcomer uncounted", s)
	}
	for i := 0; i < 32; i++ {
		if ok, _ := w.AdmitAt(fmt.Sprint("bad", i), 0); ok {
			t.Fatalf("bad%d forgotten", i)
		}
	}
	w2 := newWindow(t, 2, time.Hour)
	w2.max = 64
	for i := 0; i < 10; i++ {
		w2.RecordAt(fmt.Sprint("bad", i), 0)
		w2.RecordAt(fmt.Sprint("bad", i), 0)
	}
	for i := 0; i < 1000; i++ {
		w2.RecordAt(fmt.Sprint("fresh", i), 0)
		if s := w2.Snapshot(); s.Stored > 64 {
			t.Fatalf("stored %d over the bound", s.Stored)
		}
	}
	for i := 0; i < 10; i++ {
		if ok, _ := w2.AdmitAt(fmt.Sprint("bad", i), 0); ok {
			t.Fatalf("bad%d forgotten in a flood", i)
		}
	}
	if s := w2.Snapshot(); s.Evictions < 900 {
		t.Fatalf("snapshot %+v: want the fresh keys evicting each other", s)
	}
}

func TestAllocs(t *testing.T) {
	w := newWindow(t, 3, time.Minute)
	w.RecordAt("2001:db8:85a3:8d3:1319:8a2e:370:7348", 0)
	long := strings.Repeat("k", 300)
	w.RecordAt(long, 0)
	for name, key := range map[string]string{"known": "2001:db8:85a3:8d3:1319:8a2e:370:7348", "unknown": "198.51.100.9", "long": long} {
		if a := testing.AllocsPerRun(1000, func() { w.AdmitAt(key, sec) }); a != 0 {
			t.Errorf("Admit of a %s key allocates %v", name, a)
		}
	}
	if a := testing.AllocsPerRun(1000, func() { w.RecordAt("2001:db8:85a3:8d3:1319:8a2e:370:7348", sec) }); a != 0 {
		t.Errorf("Record of a key at its limit allocates %v", a)
	}
}

// TestNewest: the newest stamp of a ring, for every head and count.
func TestNewest(t *testing.T) {
	for size := 1; size <= 4; size++ {
		for head := 0; head < size; head++ {
			for n := 1; n <= size; n++ {
				e := entry{ring: newRing(size), at: int32(head), n: int32(n)}
				for k := 0; k < n; k++ {
					e.stamps()[(head+k)%size] = int64(k + 1)
				}
				if got := *e.newest(); got != int64(n) {
					t.Fatalf("ring of %d, head %d, %d stamps: newest = %d, want %d", size, head, n, got, n)
				}
			}
		}
	}
}

// The trace tables, run on a Window and on a Core.
var (
	boundarySteps = []step{
		{at: 0, ok: true},
		{at: 0, record: true},
		{at: 1 * sec, record: true},
		{at: 2 * sec, ok: true}, // two failures: under the limit
		{at: 2 * sec, record: true},
		{at: 2 * sec, ok: false, retry: 8 * time.Second},
		{at: 10*sec - 1, ok: false, retry: 1},
		{at: 10 * sec, ok: true},     // the first failure is exactly a window old: out
		{at: 10 * sec, record: true}, // three again: 1s, 2s, 10s
		{at: 10 * sec, ok: false, retry: time.Second},
		{at: 11 * sec, ok: true},
		{at: 30 * sec, ok: true}, // all expired: like an absent key
		{at: 30 * sec, record: true},
		{at: 30 * sec, record: true},
		{at: 30 * sec, record: true},
		{at: 30 * sec, record: true}, // a fourth at the limit: the oldest gives its place
		{at: 39 * sec, ok: false, retry: time.Second},
		{at: 40 * sec, ok: true},
	}
	backwardsSteps = []step{
		{at: 50 * sec, record: true},
		{at: 45 * sec, record: true},                       // 5 s back: stamped at 50 s
		{at: 45 * sec, ok: false, retry: 10 * time.Second}, // 50 + 10 − 45 = 15 s, held to the window
		{at: 40 * sec, ok: false, retry: 10 * time.Second}, // a window ahead exactly: not pulled back
		{at: 55 * sec, ok: false, retry: 5 * time.Second},  // so the stamps still leave at 60 s
		{at: 60*sec - 1, ok: false, retry: 1},
		{at: 60 * sec, ok: true}, // both stamps at 50 s left together
	}
	pullBackSteps = []step{
		{at: 100 * sec, record: true},
		{at: 100 * sec, record: true},
		{at: 20 * sec, ok: false, retry: 10 * time.Second}, // 80 s back: pulled back to 20 s
		{at: 30*sec - 1, ok: false, retry: 1},
		{at: 30 * sec, ok: true},
		{at: 100 * sec, ok: true}, // the stamps were moved, not read anew: still out
		{at: 200 * sec, record: true},
		{at: 500 * sec, record: true},               // 300 s ahead of the first: it leaves
		{at: 0, record: true},                       // 500 s back: pulled back to 0, then stamped 0
		{at: 0, ok: false, retry: 10 * time.Second}, // two failures at 0
		{at: -time.Hour.Nanoseconds(), ok: false, retry: 10 * time.Second},
		{at: -time.Hour.Nanoseconds() + 10*sec, ok: true}, // pulled back to −1 h, out 10 s later
	}
	extremeSteps = []step{
		{at: math.MinInt64, record: true},
		{at: math.MaxInt64, ok: true}, // the whole clock later: out
		{at: math.MinInt64, ok: false, retry: time.Minute},
		{at: math.MinInt64 + int64(time.Minute), ok: true},
		{at: math.MaxInt64, record: true},
		{at: math.MaxInt64, ok: false, retry: time.Minute},
		{at: math.MinInt64, ok: false, retry: time.Minute}, // pulled back to the other end
		{at: math.MinInt64 + int64(time.Minute), ok: true},
	}
)
