package wardredis_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wardgo/ward"
	"github.com/wardgo/ward/breaker"
	wardredis "github.com/wardgo/ward/contrib/redis"
	"github.com/wardgo/ward/internal/testkit"
	"github.com/wardgo/ward/rate"
)

// TestServerKilled kills the server under a limiter that falls back to a local bucket, and
// restarts it on the same port: the fallback holds the share of the quota while the server is
// away, the breaker opens and keeps calls from it, and the store decides again once the server
// is back and the breaker's window has moved on, without a new limiter.
func TestServerKilled(t *testing.T) {
	path, _ := testkit.RedisPath()
	s, err := testkit.StartRedis(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Stop() }()
	c := client(t, s)
	var now atomic.Int64 // the breaker's clock, moved by hand
	b, err := breaker.New(breaker.WithClock(now.Load), breaker.WithRefresh(0), breaker.WithRand(func() float64 { return 0.5 }))
	if err != nil {
		t.Fatal(err)
	}
	// the limiter's clock, and so its fallback's, stands still: the fallback holds exactly its
	// share of the burst however long the calls take
	var still atomic.Int64
	still.Store(time.Now().UnixNano())
	l, err := wardredis.NewBucket(c, prefix(t), 1, 10, wardredis.WithFallback(0.5), wardredis.WithBreaker(b),
		wardredis.WithClock(still.Load), wait)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 10 {
		if d, err := l.Take(ctx, "k", 1); err != nil || !d.OK || d.By != wardredis.Store {
			t.Fatalf("call %d with the server up: %+v, %v", i, d, err)
		}
	}
	s.Stop()
	fellBack, broken := 0, 0
	for i := 0; i < 200 && broken == 0; i++ {
		d, err := l.Take(ctx, "k", 1)
		if err == nil || d.By != wardredis.Failed || d.Policy != wardredis.Fallback {
			t.Fatalf("call %d with the server down: %+v, %v", i, d, err)
		}
		if errors.Is(err, breaker.ErrUnavailable) {
			broken++
		}
		if d.OK {
			fellBack++
		}
	}
	st := l.Stats()
	if broken == 0 || st.Broken == 0 || st.Errors == 0 {
		t.Fatalf("the breaker never opened: %+v", st)
	}
	if fellBack != 5 || int(st.FellBack) != 5 {
		t.Fatalf("the fallback admitted %d (stats %+v), want its share of the burst, 5", fellBack, st)
	}
	s2, err := testkit.StartRedis(path, s.Port)
	if err != nil {
		t.Fatal(err)
	}
	s = s2
	now.Add(int64(11 * time.Second)) // the breaker's window forgets the failures
	// go-redis's pool, after dials failed, dials again in the background about once a second:
	// poll, bounded, until the store answers
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(patient); ; <-tick.C {
		d, err := l.Take(ctx, "k", 1)
		if err == nil && d.By == wardredis.Store && d.OK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the restart: %+v, %v (stats %+v)", patient, d, err, l.Stats())
		}
		now.Add(int64(time.Second)) // the breaker's probe lets a call through each second
	}
}

// TestGarbage puts something else under a limiter's key: a clear error naming the key and
// matching ErrGarbage, the failure policy's answer, never a panic; the server is not counted as
// down.
func TestGarbage(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	bk, err := wardredis.NewBucket(c, prefix(t), 1, 1, wait)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := wardredis.NewPeriod(c, prefix(t), 1, time.Second, false, wait)
	if err != nil {
		t.Fatal(err)
	}
	put := []func(key string) error{
		func(key string) error { return c.Set(ctx, key, "hello", 0).Err() },
		func(key string) error { return c.Set(ctx, key, "many 1", 0).Err() },
		func(key string) error { return c.Set(ctx, key, "1 later", 0).Err() },
		func(key string) error { return c.Set(ctx, key, "1 2 3", 0).Err() },
		func(key string) error { return c.HSet(ctx, key, "t", "1", "s", "2").Err() },
		func(key string) error { return c.RPush(ctx, key, "a").Err() },
	}
	sl, err := wardredis.NewSliding(c, prefix(t), 1, time.Second, wait)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wardredis.NewSliding(c, prefix(t), 1, time.Second, wardredis.WithLease(1, time.Second)); !errors.Is(err, wardredis.ErrInvalid) {
		t.Errorf("a sliding window with a lease: %v, want ErrInvalid", err)
	}
	for _, l := range []*wardredis.Limiter{bk, pd, sl} {
		for i, p := range put {
			key := "g" + string(rune('a'+i))
			if err := p(prefix(t) + key); err != nil {
				t.Fatal(err)
			}
			d, err := l.Take(ctx, key, 1)
			if !errors.Is(err, wardredis.ErrGarbage) || !strings.Contains(err.Error(), prefix(t)+key) || d.OK || d.By != wardredis.Failed {
				t.Errorf("garbage %d: %+v, %v", i, d, err)
			}
			if err := l.Do(ctx, key, func(context.Context) error { return nil }); !errors.Is(err, wardredis.ErrUnavailable) || !errors.Is(err, ward.ErrRefused) {
				t.Errorf("garbage %d: Do = %v", i, err)
			}
			_ = c.Del(ctx, prefix(t)+key)
		}
	}
	if st := bk.Stats(); st.Garbage != 12 || st.Errors != 0 {
		t.Errorf("stats %+v: want 12 garbage calls and no store errors", st)
	}
}

// TestScriptFlush flushes the server's script cache between calls: the next call loads the
// script again.
func TestScriptFlush(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	l, err := wardredis.NewPeriod(c, prefix(t), 2, time.Minute, false, wait)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := l.Take(ctx, "k", 1)
		if err != nil || d.OK != want {
			t.Fatalf("call %d after SCRIPT FLUSH: %+v, %v", i, d, err)
		}
	}
}

// TestSlowServer pauses the server: a call returns by its context's deadline, and the failure
// policy answers.
func TestSlowServer(t *testing.T) {
	c := client(t, shared)
	l, err := wardredis.NewBucket(c, prefix(t), 1, 1, wardredis.WithFailOpen())
	if err != nil {
		t.Fatal(err)
	}
	admin := client(t, shared)
	// the pause outlasts any delay a loaded machine adds: a call that returned with the pause
	// over would have been decided, and the test would say so
	if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.Do(context.Background(), "CLIENT", "UNPAUSE")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	begin := time.Now()
	d, err := l.Take(ctx, "k", 1)
	if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) || !d.OK || d.Policy != wardredis.FailOpen {
		t.Fatalf("paused server: %+v, %v", d, err)
	}
	if took := time.Since(begin); took > patient/2 { // the pause lasts a minute
		t.Fatalf("the call took %v past a 20ms deadline", took)
	}
	if st := l.Stats(); st.Errors != 1 || st.Opened != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestContract: a Key is a ward.Guard and a rate.Permit; a refusal matches ward.ErrRefused and
// rate.ErrLimited and carries its wait.
func TestContract(t *testing.T) {
	var _ ward.Guard = (*wardredis.Key)(nil)
	var _ rate.Permit = (*wardredis.Key)(nil)
	c := client(t, shared)
	begin := time.Now()
	l, err := wardredis.NewBucket(c, prefix(t), 2, 1, wait)
	if err != nil {
		t.Fatal(err)
	}
	k := l.Key("k")
	calls := 0
	fn := func(context.Context) error { calls++; return nil }
	if err := k.Do(context.Background(), fn); err != nil || calls != 1 {
		t.Fatalf("first Do: %v, %d calls", err, calls)
	}
	err = k.Do(context.Background(), fn)
	w, ok := ward.RetryAfter(err)
	if !errors.Is(err, ward.ErrRefused) || !errors.Is(err, rate.ErrLimited) || !ok || w <= 0 || w > 500*time.Millisecond || calls != 1 {
		t.Fatalf("second Do: %v (wait %v %v), %d calls", err, w, ok, calls)
	}
	k.Release(0)
	if !k.Acquire(0) {
		t.Fatal("Acquire after Release refused")
	}
	k.Release(0)
	if a, err := k.Admit(context.Background()); err != nil || !a.Settled() {
		t.Fatalf("Admit: %v (settled %v)", err, a.Settled())
	}
	if _, err := k.Admit(context.Background()); !errors.Is(err, rate.ErrLimited) || !errors.Is(err, ward.ErrRefused) {
		t.Fatalf("Admit on a spent key: %v", err)
	}
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.Admit(dead); !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit with a done context: %v", err)
	}
	// the server runs on this machine: its clock, as the replies said it, is the local Unix time
	// give or take the time the calls took
	slack := time.Since(begin) + 10*time.Millisecond
	if srv, local := l.Now(), time.Now().UnixNano(); srv-local > int64(slack) || local-srv > int64(slack) {
		t.Fatalf("Now() = %d, the local Unix time %d (calls took %v)", srv, local, slack)
	}
	// a chain of a local gate and the shared key
	g, _ := rate.NewGate(1)
	ch := rate.Chain(g, l.Key("chained"))
	if !ch.Acquire(0) || ch.Acquire(0) {
		t.Fatal("Chain(gate 1, key) admitted other than once")
	}
}

// TestInvalid: every configuration error names its field and matches ward.ErrInvalid.
func TestInvalid(t *testing.T) {
	c := client(t, shared)
	lax := redis.NewClient(&redis.Options{Addr: shared.Addr()})
	defer lax.Close()
	cases := []struct {
		field string
		make  func() error
	}{
		{"rate", func() error { _, err := wardredis.NewBucket(c, "", 0, 1); return err }},
		{"burst", func() error { _, err := wardredis.NewBucket(c, "", 1, 0); return err }},
		{"quota", func() error { _, err := wardredis.NewPeriod(c, "", 0, time.Second, false); return err }},
		{"period", func() error { _, err := wardredis.NewPeriod(c, "", 1, time.Nanosecond, false); return err }},
		{"client", func() error { _, err := wardredis.NewBucket(nil, "", 1, 1); return err }},
		{"ContextTimeoutEnabled", func() error { _, err := wardredis.NewBucket(lax, "", 1, 1); return err }},
		{"WithLease max", func() error {
			_, err := wardredis.NewBucket(c, "", 1, 5, wardredis.WithLease(6, time.Second))
			return err
		}},
		{"WithLease life", func() error { _, err := wardredis.NewBucket(c, "", 1, 5, wardredis.WithLease(1, 0)); return err }},
		{"WithFallback", func() error { _, err := wardredis.NewBucket(c, "", 1, 5, wardredis.WithFallback(0)); return err }},
		{"WithBreaker", func() error { _, err := wardredis.NewBucket(c, "", 1, 5, wardredis.WithBreaker(nil)); return err }},
		{"WithClock", func() error { _, err := wardredis.NewBucket(c, "", 1, 5, wardredis.WithClock(nil)); return err }},
		{"WithTimeout", func() error { _, err := wardredis.NewBucket(c, "", 1, 5, wardredis.WithTimeout(0)); return err }},
		{"option 0", func() error { _, err := wardredis.NewBucket(c, "", 1, 5, nil); return err }},
		{"client", func() error { _, err := wardredis.NewBucket((*redis.Client)(nil), "", 1, 1); return err }},
		{"client", func() error {
			_, err := wardredis.NewPeriod((*redis.ClusterClient)(nil), "", 1, time.Second, false)
			return err
		}},
		{"client", func() error { _, err := wardredis.NewSliding((*redis.Ring)(nil), "", 1, time.Second); return err }},
		{"rate", func() error { _, err := wardredis.NewBucket(c, "", 1e-17, 1); return err }},
		{"rate", func() error { _, err := wardredis.NewBucket(c, "", 5e-324, 1); return err }},
		{"rate", func() error { _, err := wardredis.NewBucket(c, "", 1e-9, 1e6); return err }},
	}
	for _, tc := range cases {
		err := tc.make()
		if !errors.Is(err, ward.ErrInvalid) || !errors.Is(err, wardredis.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	l, _ := wardredis.NewBucket(c, "", 1, 5, wait)
	if _, err := l.TakeAt(context.Background(), "k", wardredis.MaxInstant+1000, 1); !errors.Is(err, ward.ErrInvalid) {
		t.Errorf("TakeAt beyond MaxInstant: %v", err)
	}
	// the slowest bucket taken decides, and its key's expiry is one the server keeps
	slow, err := wardredis.NewBucket(c, prefix(t), 2/(float64(wardredis.MaxInstant)/1e9), 2, wait)
	if err != nil {
		t.Fatalf("the slowest bucket: %v", err)
	}
	for i, want := range []bool{true, true, false} {
		if d, err := slow.Take(context.Background(), "slow", 1); err != nil || d.OK != want || d.By != wardredis.Store {
			t.Fatalf("the slowest bucket, call %d: %+v, %v", i, d, err)
		}
	}
}

// TestLease: one process leasing from a hot key admits no more than the bucket holds, in far
// fewer round trips than calls, and keys expire once full.
func TestLease(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	var now atomic.Int64 // stands still: no lease expires, the bucket does not refill
	now.Store(int64(time.Hour))
	l, err := wardredis.NewBucket(c, prefix(t), 1, 500, wardredis.WithLease(100, time.Second), wardredis.WithClock(now.Load), wait)
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 1000 {
		if d, err := l.Take(ctx, "hot", 1); err != nil {
			t.Fatal(err)
		} else if d.OK {
			admitted++
		}
	}
	st := l.Stats()
	if admitted != 500 || st.RoundTrips*10 > uint64(admitted) {
		t.Fatalf("admitted %d of a burst of 500 in %d round trips (stats %+v)", admitted, st.RoundTrips, st)
	}
	ttl, err := c.PTTL(ctx, prefix(t)+"hot").Result()
	if err != nil || ttl < 500*time.Second || ttl > 501*time.Second {
		t.Fatalf("PTTL of a spent bucket of 500 at 1/s = %v, %v: want about 500 s and the 1 s keep", ttl, err)
	}
}

// TestLeaseAllocs: a call answered by a lease, or refused while the store's refusal stands,
// allocates nothing, through a prefixed Limiter.Take as through a Key.
func TestLeaseAllocs(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clk := wardredis.WithClock(now.Load)
	l, err := wardredis.NewBucket(c, prefix(t), 1, 1000, wardredis.WithLease(1000, time.Hour), clk, wait)
	if err != nil {
		t.Fatal(err)
	}
	k := l.Key("k")
	for _, key := range []string{"hot", "k"} {
		for range 2 { // the first lease is of one token, the second of the most
			if d, err := l.Take(ctx, key, 1); err != nil || !d.OK || d.By != wardredis.Store {
				t.Fatalf("%s: %+v, %v", key, d, err)
			}
		}
	}
	ok := func(context.Context) error { return nil }
	cases := map[string]func(){
		"Limiter.Take": func() {
			if d, err := l.Take(ctx, "hot", 1); err != nil || !d.OK || d.By != wardredis.Lease {
				t.Fatalf("%+v, %v", d, err)
			}
		},
		"Key.Allow": func() {
			if !k.Allow() {
				t.Fatal("refused")
			}
		},
		"Key.Do": func() {
			if err := k.Do(ctx, ok); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, f := range cases {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s from a lease: %v allocations, want 0", name, a)
		}
	}
	// a bucket of one token: spent, then refused by the store, then refused here
	one, err := wardredis.NewBucket(c, prefix(t)+"one:", 1, 1, wardredis.WithLease(1, time.Hour), clk, wait)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []wardredis.Source{wardredis.Store, wardredis.Store, wardredis.Lease} {
		if d, err := one.Take(ctx, "k", 1); err != nil || d.OK != (i == 0) || d.By != want {
			t.Fatalf("call %d: %+v, %v", i, d, err)
		}
	}
	held := testing.AllocsPerRun(100, func() {
		if d, _ := one.Take(ctx, "k", 1); d.OK || d.By != wardredis.Lease || d.Wait <= 0 {
			t.Fatalf("%+v", d)
		}
	})
	if held != 0 {
		t.Errorf("a refusal held from the store's: %v allocations, want 0", held)
	}
}
