package failurewindow

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/procs"
	"github.com/wardgo/ward/internal/stripe"
)

// TestCounts: a Window driven from one goroutine at explicit instants counts what Admit answered,
// every failure reported, and Do's successes and neutral outcomes, step by step.
func TestCounts(t *testing.T) {
	const s = int64(time.Second)
	var now int64
	w, err := New(2, 10*time.Second, WithClock(func() int64 { return now }),
		WithOwnError(func(err error) bool { return errors.Is(err, errNoSuchUser) }))
	if err != nil {
		t.Fatal(err)
	}
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	steps := []struct {
		at   int64
		op   string // admit, record, pass, fail, own, dead (Do with a ctx done), panic
		ok   bool   // admit's answer, or whether Do returned nil
		want ward.Counts
	}{
		{0, "admit", true, ward.Counts{Admitted: 1}},
		{0, "record", true, ward.Counts{Admitted: 1, Failed: 1}},
		{s, "pass", true, ward.Counts{Admitted: 2, Failed: 1, Passed: 1}},
		{s, "own", false, ward.Counts{Admitted: 3, Failed: 1, Passed: 1, Ignored: 1}},
		{2 * s, "fail", false, ward.Counts{Admitted: 4, Failed: 2, Passed: 1, Ignored: 1}}, // the second failure: at the limit
		{2 * s, "admit", false, ward.Counts{Admitted: 4, Refused: 1, Failed: 2, Passed: 1, Ignored: 1}},
		{3 * s, "pass", false, ward.Counts{Admitted: 4, Refused: 2, Failed: 2, Passed: 1, Ignored: 1}}, // Do refused
		{3 * s, "dead", false, ward.Counts{Admitted: 4, Refused: 2, Failed: 2, Passed: 1, Ignored: 1}},
		{3 * s, "record", true, ward.Counts{Admitted: 4, Refused: 2, Failed: 3, Passed: 1, Ignored: 1}},  // a refused key's failure still counts
		{12 * s, "panic", false, ward.Counts{Admitted: 5, Refused: 2, Failed: 4, Passed: 1, Ignored: 1}}, // 0 s and 2 s have left: room
		{12 * s, "admit", false, ward.Counts{Admitted: 5, Refused: 3, Failed: 4, Passed: 1, Ignored: 1}},
	}
	for i, st := range steps {
		now = st.at
		var ok bool
		do := func(ctx context.Context, ret error) bool {
			return w.Do(ctx, "k", func(context.Context) error { return ret }) == nil
		}
		switch st.op {
		case "admit":
			ok, _ = w.Admit("k")
		case "record":
			w.Record("k")
			ok = true
		case "pass":
			ok = do(context.Background(), nil)
		case "fail":
			ok = do(context.Background(), errWrongPassword)
		case "own":
			ok = do(context.Background(), errNoSuchUser)
		case "dead":
			ok = do(dead, nil)
		case "panic":
			func() {
				defer func() { recover() }()
				w.Do(context.Background(), "k", func(context.Context) error { panic("boom") })
			}()
		}
		if ok != st.ok {
			t.Errorf("step %d: %s at %d = %v, want %v", i, st.op, st.at, ok, st.ok)
		}
		if got := w.Counts(); got != st.want {
			t.Errorf("step %d: after %s at %d Counts = %+v, want %+v", i, st.op, st.at, got, st.want)
		}
	}
}

// TestCountsConcurrent: Do from many goroutines on a few keys; the counts add up to the calls
// made and match the outcomes the callers saw, and every admitted call has settled.
func TestCountsConcurrent(t *testing.T) {
	const goroutines, calls = 8, 2000
	var mu sync.Mutex
	var tick int64
	w, err := New(3, time.Millisecond, WithClock(func() int64 {
		mu.Lock()
		defer mu.Unlock()
		tick += int64(time.Microsecond)
		return tick
	}), WithOwnError(func(err error) bool { return errors.Is(err, errNoSuchUser) }))
	if err != nil {
		t.Fatal(err)
	}
	var seen [goroutines]ward.Counts
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			keys := []string{"a", "b", "c"}
			for i := range calls {
				var ret error
				switch i % 4 {
				case 1:
					ret = errWrongPassword
				case 3:
					ret = errNoSuchUser
				}
				ran := false
				err := w.Do(context.Background(), keys[(i+g)%len(keys)], func(context.Context) error { ran = true; return ret })
				c := &seen[g]
				switch {
				case !ran:
					c.Refused++
				case err == nil:
					c.Admitted++
					c.Passed++
				case errors.Is(err, errNoSuchUser):
					c.Admitted++
					c.Ignored++
				default:
					c.Admitted++
					c.Failed++
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	var want ward.Counts
	for _, c := range seen {
		want.Admitted += c.Admitted
		want.Refused += c.Refused
		want.Passed += c.Passed
		want.Failed += c.Failed
		want.Ignored += c.Ignored
	}
	got := w.Counts()
	if got != want || got.Admitted+got.Refused != goroutines*calls || got.Unsettled() != 0 {
		t.Errorf("Counts = %+v, want %+v (%d calls, all settled)", got, want, goroutines*calls)
	}
}

// TestCountsAllocs: counting keeps Admit, refused or not, and Record of a key at its limit free
// of allocations.
func TestCountsAllocs(t *testing.T) {
	w, err := New(1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { w.Admit("fresh") }); n != 0 {
		t.Errorf("an admitted Admit: %v allocations, want 0", n)
	}
	w.Record("k")
	if n := testing.AllocsPerRun(1000, func() { w.Admit("k") }); n != 0 {
		t.Errorf("a refused Admit: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { w.Record("k") }); n != 0 {
		t.Errorf("Record at the limit: %v allocations, want 0", n)
	}
	if c := w.Counts(); c.Admitted < 1000 || c.Refused < 1000 || c.Failed < 1001 {
		t.Errorf("Counts = %+v, want every call counted", c)
	}
}

// TestAdmitCountsEveryPath: each way Admit reaches its answer counts it once, in the row of the P
// it pinned or through add when it unpinned first: an unknown key, a known key judged lock-free
// (admitted, refused, out of the window), one caught while a write is under way and one whose
// stamps need a pull-back (both judged under the lock), and a key judged on the user's clock.
func TestAdmitCountsEveryPath(t *testing.T) {
	const sec, min = int64(time.Second), int64(time.Minute)
	w, err := New(1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	user, err := New(1, time.Minute, WithClock(func() int64 { return sec }))
	if err != nil {
		t.Fatal(err)
	}
	w.RecordAt("a", 0)
	w.RecordAt("far", 10*min) // stamped far ahead of the instants below: a pull-back
	user.RecordAt("a", 0)
	var want, wantUser ward.Counts
	want.Failed, wantUser.Failed = 2, 1
	steps := []struct {
		name string
		w    *Window
		call func() bool
		ok   bool
	}{
		{"unknown key", w, func() bool { ok, _ := w.AdmitAt("b", sec); return ok }, true},
		{"unknown key, clocked", w, func() bool { ok, _ := w.Admit("b"); return ok }, true},
		{"known key at its limit", w, func() bool { ok, _ := w.AdmitAt("a", sec); return ok }, false},
		{"known key, out of the window", w, func() bool { ok, _ := w.AdmitAt("a", 2*min); return ok }, true},
		{"a write under way", w, func() bool {
			e, _ := w.find(&w.heads, "a")
			e.begin() // as a writer holding the lock would leave it; admitLocked's publish ends it
			ok, _ := w.AdmitAt("a", sec)
			return ok
		}, false},
		{"a pull-back", w, func() bool { ok, _ := w.AdmitAt("far", sec); return ok }, false},
		{"the user's clock", user, func() bool { ok, _ := user.Admit("a"); return ok }, false},
		{"the user's clock, unknown key", user, func() bool { ok, _ := user.Admit("b"); return ok }, true},
	}
	for _, st := range steps {
		if ok := st.call(); ok != st.ok {
			t.Fatalf("%s: admitted %v, want %v", st.name, ok, st.ok)
		}
		c := &want
		if st.w == user {
			c = &wantUser
		}
		if st.ok {
			c.Admitted++
		} else {
			c.Refused++
		}
		if got := st.w.Counts(); got != *c {
			t.Fatalf("%s: Counts = %+v, want %+v", st.name, got, *c)
		}
	}
	if e, _ := w.find(&w.heads, "a"); atomic.LoadUint64(&e.seq)&1 != 0 {
		t.Fatal("the write under way was not ended by the judgment under the lock")
	}
}

// TestAdmitCountsAcrossGOMAXPROCS: Admit on a P past the rows made at New finds no row to count in
// while pinned, unpins, and counts through add, which grows the rows: every answer counted once
// while GOMAXPROCS moves between 1 and 32 (only Admit runs meanwhile, so only its path grows them).
func TestAdmitCountsAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // built at 1: every later P is past the rows
	w, err := New(1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w.RecordAt("known", 0)
	rows := w.counts.Rows()
	const goroutines, calls = 16, 2000
	var wg sync.WaitGroup
	start := make(chan struct{})
	var admitted, refused [goroutines]uint64
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range calls {
				key := "known"
				if i%2 == 0 {
					key = "unknown"
				}
				if ok, _ := w.AdmitAt(key, int64(time.Second)); ok {
					admitted[g]++
				} else {
					refused[g]++
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	stop := procs.Flip()
	close(start)
	wg.Wait()
	stop()
	want := ward.Counts{Failed: 1}
	for g := range goroutines {
		want.Admitted += admitted[g]
		want.Refused += refused[g]
	}
	if got := w.Counts(); got != want || want.Admitted != want.Refused {
		t.Errorf("Counts = %+v, want %+v (the unknown key admitted, the known one refused, alike)", got, want)
	}
	if stripe.Pinned && w.counts.Rows() == rows { // the fallback build picks among the rows made
		t.Logf("rows %d: no Admit ran on a P past the first (scheduling)", rows)
	}
}
