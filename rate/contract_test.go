package rate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/stripe"
)

// limiter is the one shape every concurrent limiter of this package has.
type limiter interface {
	ward.Guard
	Permit
	Allow() bool
	TakeAt(now int64, n int) (ok bool, wait time.Duration)
	Next(now int64, n int) time.Duration
	Left(now int64) int
}

var (
	_ limiter = (*BucketLimiter)(nil)
	_ limiter = (*SlidingLimiter)(nil)
	_ limiter = (*PeriodLimiter)(nil)
	_ Permit  = (*Bucket)(nil)
	_ Permit  = (*Sliding)(nil)
	_ Permit  = (*Period)(nil)
	_ Permit  = (*Gate)(nil)
)

// core is the one shape of the pure cores.
type core interface {
	Permit
	TakeAt(now int64, n int) (ok bool, wait time.Duration)
	Next(now int64, n int) time.Duration
	Left(now int64) int
}

var (
	_ core = (*Bucket)(nil)
	_ core = (*Sliding)(nil)
	_ core = (*Period)(nil)
)

// limiters builds a limiter of each kind allowing two calls, on clock: a bucket of 2 refilling
// one every 100 ms, a window and a period of 2 per 200 ms.
func limiters(t *testing.T, clock func() int64) map[string]limiter {
	t.Helper()
	b, err := NewBucketLimiter(10, 2, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSlidingLimiter(2, 200*time.Millisecond, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPeriodLimiter(2, 200*time.Millisecond, false, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]limiter{"bucket": b, "sliding": s, "period": p}
}

// TestNow: Now is the clock, and Allow decides at it.
func TestNow(t *testing.T) {
	now := int64(12345)
	for name, l := range limiters(t, func() int64 { return now }) {
		if got := l.Now(); got != now {
			t.Errorf("%s: Now = %d, want %d", name, got, now)
		}
		if first, second, third := l.Allow(), l.Allow(), l.Allow(); !first || !second || third {
			t.Errorf("%s: Allow does not decide at Now", name)
		}
		if left := l.Left(now); left != 0 {
			t.Errorf("%s: after two Allow at Now, Left(Now) = %d", name, left)
		}
	}
}

// TestDo: Do runs fn when admitted and returns its error unchanged; refused, it returns
// ErrLimited (matching ward.ErrRefused) with the wait TakeAt reports, without calling fn. The same
// code drives every limiter.
func TestDo(t *testing.T) {
	now := int64(0)
	mine := errors.New("not found")
	for name, l := range limiters(t, func() int64 { return now }) {
		now = 0
		calls := 0
		fn := func(context.Context) error { calls++; return mine }
		if err := l.Do(context.Background(), fn); err != mine {
			t.Fatalf("%s: Do returned %v, want fn's error unchanged", name, err)
		}
		if err := l.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
			t.Fatalf("%s: Do = %v", name, err)
		}
		want := l.Next(now, 1)
		err := l.Do(context.Background(), fn)
		wait, ok := ward.RetryAfter(err)
		if !errors.Is(err, ErrLimited) || !errors.Is(err, ward.ErrRefused) || !ok || wait != want || wait <= 0 || calls != 1 {
			t.Fatalf("%s: refused Do = %v (wait %v, %v), want ErrLimited with a wait of %v, fn not called (%d calls)", name, err, wait, ok, want, calls)
		}
		now += int64(wait)
		if err := l.Do(context.Background(), fn); err != mine || calls != 2 {
			t.Fatalf("%s: Do after the wait it reported = %v", name, err)
		}
		if a := testing.AllocsPerRun(100, func() { _ = l.Do(context.Background(), fn) }); a > 1 {
			t.Errorf("%s: a refused Do allocates %v, want at most the one wait", name, a)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Do swallowed fn's panic")
			}
		}()
		b, _ := NewBucketLimiter(1, 1)
		_ = b.Do(context.Background(), func(context.Context) error { panic("boom") })
	}()
}

// TestOptions: a nil option and a nil clock are errors naming what is wrong.
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opt  Option
		name string
	}{{nil, "option 0"}, {WithClock(nil), "WithClock"}} {
		_, e1 := NewBucketLimiter(1, 1, c.opt)
		_, e2 := NewSlidingLimiter(1, time.Second, c.opt)
		_, e3 := NewPeriodLimiter(1, time.Second, false, c.opt)
		for _, err := range []error{e1, e2, e3} {
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), c.name) {
				t.Errorf("%s: %v, want an error naming it", c.name, err)
			}
		}
	}
	if _, err := NewPeriod(1, 0, false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "period") {
		t.Errorf("NewPeriod with a period of 0: %v, want an error naming the period", err)
	}
	if _, err := NewPeriodLimiter(1, -time.Second, true); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "period") {
		t.Errorf("NewPeriodLimiter with a negative period: %v", err)
	}
}

// TestClockMixing: a limiter whose clock started near 0 is passed a Unix-nanosecond instant, then
// called at its own clock again, and the other way round. Neither wedges it (refusing for decades)
// nor over-admits: each jump forward finds at most a full allowance (time passed), each jump back
// finds the limiter spent at that instant, and it admits again a period, a window or an interval
// later.
func TestClockMixing(t *testing.T) {
	const unix = int64(1_767_225_600_000_000_000) // 2026-01-01 in Unix nanoseconds
	now := int64(time.Second)
	for name, l := range limiters(t, func() int64 { return now }) {
		now = int64(time.Second)
		admitted := 0
		for l.Allow() {
			admitted++
		}
		if admitted != 2 {
			t.Fatalf("%s: %d admitted at once, want 2", name, admitted)
		}
		// A jump forward: time passed, the full allowance and no more.
		for ok, _ := l.TakeAt(unix, 1); ok; ok, _ = l.TakeAt(unix, 1) {
			admitted++
		}
		if admitted != 4 {
			t.Fatalf("%s: %d admitted after a jump to Unix time, want 4", name, admitted)
		}
		// Back on its own clock: spent at this instant, not for decades.
		wait := l.Next(now, 1)
		if l.Allow() || wait <= 0 || wait > 200*time.Millisecond {
			t.Fatalf("%s: back on its clock, Allow admitted or waits %v", name, wait)
		}
		now += int64(wait)
		if !l.Allow() {
			t.Fatalf("%s: wedged: refused %v after the jump back, the wait it reported", name, wait)
		}
		// And over a second of its own clock, at most its rate, whatever the Unix calls did.
		got := 0
		for i := 0; i < 1000; i++ {
			now += int64(time.Millisecond)
			if l.Allow() {
				got++
			}
		}
		if got > 10 || got < 9 {
			t.Errorf("%s: %d admitted over a second of its clock after the jumps, want 9 or 10", name, got)
		}
	}
}

// TestCoreClockMixing: the pure cores keep the same rule, Step included.
func TestCoreClockMixing(t *testing.T) {
	const unix = int64(1_767_225_600_000_000_000)
	b, _ := NewBucket(10, 2, unix)
	b.TakeAt(unix, 2)
	if ok, wait := b.TakeAt(0, 1); ok || wait != 100*time.Millisecond || b.TokensAt(0) != 0 {
		t.Fatalf("a bucket stamped in Unix time, asked at 0: %v %v, want empty at 0", ok, wait)
	}
	if ok, _ := b.TakeAt(int64(100*time.Millisecond), 1); !ok {
		t.Fatal("the bucket pulled back to 0 did not refill")
	}
	if g := b.Step(0, Tokens{Tokens: 2, Stamp: unix}, 1); g.Granted || g.State != (Tokens{Stamp: 0}) {
		t.Fatalf("Step from a state stamped in Unix time: %+v, want pulled back, empty", g)
	}
	if g := b.Step(0, Tokens{Tokens: 2, Stamp: int64(MaxSkew)}, 1); !g.Granted {
		t.Fatalf("Step from a state MaxSkew ahead: %+v, want a late reading of one clock", g)
	}
	p, _ := NewPeriod(2, time.Second, false)
	p.TakeAt(unix, 1)
	if ok, wait := p.TakeAt(0, 1); ok || wait != time.Second || p.Left(0) != 0 {
		t.Fatalf("a period opened in Unix time, asked at 0: %v %v, want spent until 1s", ok, wait)
	}
	if ok, _ := p.TakeAt(int64(time.Second), 1); !ok {
		t.Fatal("the period pulled back to 0 did not end a period later")
	}
	s, _ := NewSliding(2, time.Second)
	s.TakeAt(unix, 1)
	if ok, wait := s.TakeAt(0, 1); ok || wait != time.Second || s.Left(0) != 0 {
		t.Fatalf("a window holding a Unix stamp, asked at 0: %v %v, want full until 1s", ok, wait)
	}
	if ok, _ := s.TakeAt(int64(time.Second), 2); !ok {
		t.Fatal("the window pulled back to 0 did not empty a window later")
	}
	if ok, _ := s.TakeAt(int64(time.Second)-int64(MaxSkew), 1); ok {
		t.Fatal("a late reading MaxSkew behind was not judged on the window's stamps")
	}
}

// TestTakeN: n events at once, all or none, with the wait until they would pass.
func TestTakeN(t *testing.T) {
	s, _ := NewSliding(3, 10)
	for i, c := range []struct {
		now  int64
		n    int
		ok   bool
		wait time.Duration
	}{
		{0, 2, true, 0},
		{1, 2, false, 9}, // one slot left: the 0 ms pair must leave
		{1, 1, true, 0},
		{5, 4, false, Forever},
		{9, 2, false, 1}, // both stamps at 0 leave at 10
		{10, 2, true, 0},
		{10, 0, true, 0},
		{10, -3, true, 0},
		{11, 1, true, 0}, // the 1 is out at 11
	} {
		next := s.Next(c.now, c.n)
		ok, wait := s.TakeAt(c.now, c.n)
		if ok != c.ok || wait != c.wait || next != wait {
			t.Fatalf("step %d: Take(%d, %d) = %v %v (Next %v), want %v %v", i, c.now, c.n, ok, wait, next, c.ok, c.wait)
		}
	}
	checkWindows(t, []int64{0, 0, 1, 10, 10, 11}, 3, 10)

	l, _ := NewBucketLimiter(10, 3, WithClock(func() int64 { return 0 }))
	if ok, _ := l.TakeAt(0, 2); !ok {
		t.Fatal("two of a full bucket of three")
	}
	if ok, wait := l.TakeAt(0, 2); ok || wait != 100*time.Millisecond || l.Next(0, 2) != wait || l.Left(0) != 1 {
		t.Fatalf("two with one left: %v %v", ok, wait)
	}
	if ok, wait := l.TakeAt(0, 4); ok || wait != Forever {
		t.Fatal("more than the burst is not Forever")
	}
	if ok, wait := l.TakeAt(0, -1); !ok || wait != 0 {
		t.Fatal("a negative cost is not free")
	}
}

// TestBucketLimiterLayout: the TAT, written by every admission, sits alone on its cache line, and
// the limiter is a whole number of lines, so no neighbour shares either.
func TestBucketLimiterLayout(t *testing.T) {
	var b BucketLimiter
	if off := unsafe.Offsetof(b.tat); off != stripe.CacheLine {
		t.Errorf("tat at offset %d, want %d", off, stripe.CacheLine)
	}
	if off := unsafe.Offsetof(b.gen); off != 2*stripe.CacheLine {
		t.Errorf("gen at offset %d, want %d", off, 2*stripe.CacheLine)
	}
	if off := unsafe.Offsetof(b.bucketPolicy); off != 3*stripe.CacheLine {
		t.Errorf("the policy at offset %d, want %d", off, 3*stripe.CacheLine)
	}
	if size := unsafe.Sizeof(b); size%stripe.CacheLine != 0 || size < 4*stripe.CacheLine {
		t.Errorf("BucketLimiter is %d bytes, want a whole number of %d-byte lines", size, stripe.CacheLine)
	}
}
