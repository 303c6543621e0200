package wardredis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	wardredis "github.com/wardgo/ward/contrib/redis"
	"github.com/wardgo/ward/rate"
)

// TestLateRefusal: a refusal of an old period that arrives after a lease of the next period was
// granted leaves the lease's period alone: the calls it answers say the period they count in.
func TestLateRefusal(t *testing.T) {
	ctx := context.Background()
	p := newProxy(t, shared.Addr())
	var now atomic.Int64
	sec := int64(time.Second)
	now.Store(10*sec + sec/2) // in the period [10 s, 11 s)
	l, err := wardredis.NewPeriod(clientAt(t, p.Addr()), prefix(t), 4, time.Second, true,
		wardredis.WithLease(4, time.Hour), wardredis.WithClock(now.Load), wait)
	if err != nil {
		t.Fatal(err)
	}
	other, err := wardredis.NewPeriod(client(t, shared), prefix(t), 4, time.Second, true, wait)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Take(ctx, "k", 1); err != nil || !d.OK || d.Start != 10*sec {
		t.Fatalf("first call: %+v, %v", d, err)
	}
	if d, err := other.TakeAt(ctx, "k", now.Load(), 3); err != nil || !d.OK {
		t.Fatalf("another process spends the period: %+v, %v", d, err)
	}
	// a call late in the period is refused by the store, and its answer held on the way back
	now.Store(10*sec + 9*sec/10)
	sent, release := p.hold()
	late := make(chan wardredis.Decision, 1)
	go func() {
		d, err := l.Take(ctx, "k", 1)
		if err != nil {
			t.Error(err)
		}
		late <- d
	}()
	<-sent
	// meanwhile the next period opens and this process leases from it
	now.Store(11*sec + sec/5)
	for i := range 2 { // the first asks for one token, the second for the most
		if d, err := l.Take(ctx, "k", 1); err != nil || !d.OK || d.By != wardredis.Store || d.Start != 11*sec {
			t.Fatalf("call %d in the next period: %+v, %v", i, d, err)
		}
	}
	release()
	if d := <-late; d.OK || d.Start != 10*sec {
		t.Fatalf("the late call: %+v, want refused in the period at 10 s", d)
	}
	for i := range 2 {
		d, err := l.Take(ctx, "k", 1)
		if err != nil || !d.OK || d.By != wardredis.Lease || d.Start != 11*sec {
			t.Fatalf("leased call %d after the late refusal: %+v, %v; want admitted in the period at 11 s", i, d, err)
		}
	}
}

// TestFallbackLease: with leasing and a fallback together, a call of one token takes one token
// of the fallback, whatever lease it would have asked the store for: the package doc's own
// configuration admits its share of the quota while the store is away, and then refuses with
// the fallback's wait.
func TestFallbackLease(t *testing.T) {
	s := server(t)
	c := client(t, s)
	var now atomic.Int64 // stands still
	l, err := wardredis.NewPeriod(c, prefix(t), 1000, time.Minute, false,
		wardredis.WithLease(50, 100*time.Millisecond), wardredis.WithFallback(1.0/20), wardredis.WithClock(now.Load), wait)
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	ctx := context.Background()
	for i := range 50 {
		if d, err := l.Take(ctx, "k", 1); err == nil || !d.OK || d.By != wardredis.Failed || d.Policy != wardredis.Fallback {
			t.Fatalf("call %d with the store away: %+v, %v; want admitted by the fallback (50 of a quota of 1000 at 1/20)", i, d, err)
		}
	}
	d, err := l.Take(ctx, "k", 1)
	if err == nil || d.OK || d.By != wardredis.Failed || d.Wait <= 0 || d.Wait > 2*time.Second {
		t.Fatalf("call 51: %+v, %v; want refused by the fallback with a wait of about 1.2 s", d, err)
	}
	if st := l.Stats(); st.FellBack != 50 || st.FellShort != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestNegativeInstants: leasing on a clock that reads before its origin decides as at any other
// instant, and a Release on a key nothing was leased for gives nothing back locally.
func TestNegativeInstants(t *testing.T) {
	ctx := context.Background()
	for _, at := range []int64{-int64(time.Hour), -1000, -wardredis.MaxInstant} {
		var now atomic.Int64
		now.Store(at)
		l, err := wardredis.NewBucket(client(t, shared), prefix(t), 1, 3,
			wardredis.WithLease(3, time.Second), wardredis.WithClock(now.Load), wait)
		if err != nil {
			t.Fatal(err)
		}
		key := "k" + time.Duration(at).String()
		if err := l.Release(ctx, key); err != nil {
			t.Fatal(err)
		}
		admitted := 0
		for range 5 {
			d, err := l.Take(ctx, key, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.OK {
				admitted++
			} else if d.Wait <= 0 || d.Wait == rate.Forever || d.Wait > time.Second {
				t.Fatalf("at %d: refused with a wait of %v, want the bucket's 1 s", at, d.Wait)
			}
		}
		if admitted != 3 {
			t.Fatalf("at %d: %d of 5 calls admitted on a still clock, want the burst, 3 (stats %+v)", at, admitted, l.Stats())
		}
	}
}
