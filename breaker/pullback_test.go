package breaker

import (
	"math"
	"testing"
	"time"
)

// TestRefreshRacingAPullBack: a refresh folding at a far-future reading while another settle pulls
// the reading back (a clock that jumped forward and back) leaves the refresh due at once and the
// short paths closed, so the next settle refreshes at the clock's own reading; without it the
// cache, and Allow's healthy short path, would hold until the far-future instant.
func TestRefreshRacingAPullBack(t *testing.T) {
	now := int64(time.Second)
	b, err := New(WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Pass()
	}
	far := now + int64(1000*time.Hour)
	// the refresh starts at the far-future reading, whose settle stored it as the latest
	b.seen.Store(far)
	pulls := b.pulls.Load()
	// meanwhile a settle at the clock's reading pulls back
	if !b.pullBack(now) {
		t.Fatal("a reading 1000 h behind the latest is not a pull-back")
	}
	// the refresh publishes what it folded at far
	b.publish(far, pulls, 0, 0)
	if next, open := b.next.Load(), b.open.Load(); next > now || open != math.MinInt64 {
		t.Fatalf("after a refresh that raced a pull-back: next %d, open %d; want next <= %d (due) and open closed", next, open, now)
	}
	p, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Pass()
	if next := b.next.Load(); next != now+b.every {
		t.Fatalf("the next settle did not refresh at its own reading: next %d, want %d", next, now+b.every)
	}
	// a refresh with no pull-back meanwhile keeps its instants
	b.publish(now, b.pulls.Load(), 0, 0)
	if next := b.next.Load(); next != now+b.every {
		t.Fatalf("a refresh with no pull-back: next %d, want %d", next, now+b.every)
	}
}

// TestRefreshAfterAPullBack: a refresh at a far-future reading whose pull-back came before the
// refresh read the pull-back count (the settle that read the far future was delayed between its
// reading and its refresh) still leaves the refresh due at once and the short paths closed.
func TestRefreshAfterAPullBack(t *testing.T) {
	now := int64(time.Second)
	b, err := New(WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	far := now + int64(1000*time.Hour)
	b.seen.Store(far) // a settle stored the far-future reading, then waited before its refresh
	if !b.pullBack(now) {
		t.Fatal("a reading 1000 h behind the latest is not a pull-back")
	}
	b.publish(far, b.pulls.Load(), 0, 0) // the refresh reads the count after the pull-back
	if next, open := b.next.Load(), b.open.Load(); next > now || open != math.MinInt64 {
		t.Fatalf("after a refresh that followed a pull-back: next %d, open %d; want next <= %d (due) and open closed", next, open, now)
	}
	b.publish(far, b.pulls.Load(), 0.5, 0.5) // throttling: the draw's short path closed too
	if thr := b.thr.Load(); thr != math.MinInt64 {
		t.Fatalf("after a refresh that followed a pull-back: thr %d, want closed", thr)
	}
	// a refresh at a reading within a window of the latest keeps its instants
	b.publish(now+int64(time.Second), b.pulls.Load(), 0, 0)
	if next, open := b.next.Load(), b.open.Load(); next != now+int64(time.Second)+b.every || open != next {
		t.Fatalf("a refresh 1 s past the latest: next %d, open %d; want both %d", next, open, now+int64(time.Second)+b.every)
	}
}
