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
