package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wardgo/ward"
)

// TestCounts: a breaker's counts, driven from one goroutine, are the calls made, refusals
// included; admitting and settling still allocate nothing; a Nop breaker counts nothing.
func TestCounts(t *testing.T) {
	now := int64(0)
	b, err := New(WithClock(func() int64 { return now }), WithRand(func() float64 { return 0 }), WithRefresh(0))
	if err != nil {
		t.Fatal(err)
	}
	var want ward.Counts
	for i := 0; i < 200; i++ {
		now += 1e6
		p, err := b.Allow()
		if errors.Is(err, ErrUnavailable) {
			want.Refused++
			continue
		}
		want.Admitted++
		switch i % 4 {
		case 0:
			p.Pass()
			want.Passed++
		case 3:
			p.Ignore()
			want.Ignored++
		default:
			p.Fail()
			want.Failed++
		}
		p.Fail() // settled already: no count
	}
	if got := b.Counts(); got != want || want.Refused == 0 {
		t.Fatalf("Counts = %+v, want %+v (with refusals)", got, want)
	}
	now += int64(time.Minute) // the failures age out: the next call is admitted
	held, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Counts(); got.Admitted != want.Admitted {
		t.Fatalf("a call in flight counted: Admitted %d, want %d until it settles", got.Admitted, want.Admitted)
	}
	held.Pass()
	if got := b.Counts(); got.Admitted != want.Admitted+1 || got.Passed != want.Passed+1 {
		t.Fatalf("after the settle: %+v", got)
	}
	_ = b.Do(context.Background(), func(context.Context) error { return nil })
	if n := testing.AllocsPerRun(100, func() { p, _ := b.Allow(); p.Pass() }); n != 0 {
		t.Fatalf("Allow+Pass allocates %v", n)
	}
	if Nop().Counts() != (ward.Counts{}) {
		t.Fatal("a Nop breaker counts")
	}
}
