package wardredis_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	wardredis "github.com/wardgo/ward/contrib/redis"
	"github.com/wardgo/ward/rate"
)

// next returns the instant after now, in whole microseconds: often exactly the last refusal's
// wait later (the boundary where the answer turns), else forward by up to span, sometimes the
// same, sometimes a little back, now and then more than rate.MaxSkew back or far forward.
func next(r *rand.Rand, now int64, wait, span time.Duration) int64 {
	switch x := r.IntN(40); {
	case wait > 0 && wait < time.Hour && x < 20:
		now += int64(wait) + int64(r.IntN(3)-1)*1000
	case x == 20:
		now -= int64(rate.MaxSkew) + int64(time.Duration(r.IntN(5))*time.Second)
	case x == 21:
		now += int64(time.Hour)
	case x < 25:
		now -= r.Int64N(int64(span))
	case x < 29:
	default:
		now += r.Int64N(int64(span))
	}
	return now / 1000 * 1000
}

func counts(r *rand.Rand, most int) int {
	switch x := r.IntN(20); {
	case x == 0:
		return -1
	case x == 1:
		return 0
	case x == 2:
		return most
	case x == 3:
		return most + 1
	case x < 6:
		return 2
	}
	return 1
}

// stored reads a key's state: the two numbers of its value, "tokens stamp" or "start count".
func stored(ctx context.Context, c *redis.Client, key string) (float64, float64, error) {
	v, err := c.Get(ctx, key).Result()
	if err != nil {
		return 0, 0, err
	}
	a, b, _ := strings.Cut(v, " ")
	x, err := strconv.ParseFloat(a, 64)
	if err != nil {
		return 0, 0, err
	}
	y, err := strconv.ParseFloat(b, 64)
	return x, y, err
}

// TestBucketMatchesPure drives rate.Bucket.Step (the float64 arithmetic a store repeats) and the
// server's bucket through the same instants and counts, and compares every decision, wait and
// stored token count, bit for bit.
func TestBucketMatchesPure(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	policies := []struct {
		rate  float64
		burst int
	}{{10, 1}, {100, 20}, {0.3, 3}, {1e6, 1000}, {7.77, 5}}
	bases := []int64{1_780_000_000_000_000_000, 0, -3_000_000_000_000}
	r := rand.New(rand.NewPCG(1, 2))
	for pi, p := range policies {
		for bi, base := range bases {
			// a keep of an hour: real time passing during the test must not expire a key whose
			// expiry the simulated instants have not reached
			l, err := wardredis.NewBucket(c, prefix(t), p.rate, p.burst, wardredis.WithKeep(time.Hour), wait)
			if err != nil {
				t.Fatal(err)
			}
			key := strconv.Itoa(pi) + "/" + strconv.Itoa(bi)
			span := time.Duration(float64(time.Second) / p.rate * 2)
			pure, err := rate.NewBucket(p.rate, p.burst, base)
			if err != nil {
				t.Fatal(err)
			}
			now, wantWait := base, time.Duration(0)
			st := rate.Tokens{Tokens: float64(p.burst), Stamp: base}
			for i := range 200 {
				n := counts(r, p.burst)
				g := pure.Step(now, st, n)
				st = g.State
				wantOK := g.Granted
				wantWait = g.Wait
				d, err := l.TakeAt(ctx, key, now, n)
				if err != nil {
					t.Fatalf("%v/%s step %d: TakeAt(%d, %d): %v", p, key, i, now, n, err)
				}
				if d.OK != wantOK || d.Wait != wantWait || d.By != wardredis.Store {
					t.Fatalf("%v/%s step %d: TakeAt(%d, %d) = %v %v by %v, want %v %v", p, key, i, now, n, d.OK, d.Wait, d.By, wantOK, wantWait)
				}
				got, _, err := stored(ctx, c, prefix(t)+key)
				if err != nil {
					t.Fatal(err)
				}
				if want := st.Tokens; got != want {
					t.Fatalf("%v/%s step %d: stored tokens %v, want %v", p, key, i, got, want)
				}
				now = next(r, now, wantWait, span)
			}
		}
	}
}

// TestPeriodMatchesPure is the same comparison for rate.Period, aligned and not.
func TestPeriodMatchesPure(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	policies := []struct {
		quota  int
		period time.Duration
		align  bool
	}{{1, time.Second, false}, {5, 100 * time.Millisecond, true}, {10, 3 * time.Second, false}, {3, 7 * time.Millisecond, true}, {100, time.Hour, true}}
	bases := []int64{1_780_000_000_123_456_000, 0, -5_000_000_000_000}
	r := rand.New(rand.NewPCG(3, 4))
	for pi, p := range policies {
		for bi, base := range bases {
			l, err := wardredis.NewPeriod(c, prefix(t), p.quota, p.period, p.align, wardredis.WithKeep(time.Hour), wait)
			if err != nil {
				t.Fatal(err)
			}
			pure, err := rate.NewPeriod(p.quota, p.period, p.align)
			if err != nil {
				t.Fatal(err)
			}
			key := strconv.Itoa(pi) + "/" + strconv.Itoa(bi)
			now, wantWait := base, time.Duration(0)
			for i := range 200 {
				n := counts(r, p.quota)
				var wantOK bool
				wantOK, wantWait = pure.TakeAt(now, n)
				d, err := l.TakeAt(ctx, key, now, n)
				if err != nil {
					t.Fatalf("%v/%s step %d: TakeAt(%d, %d): %v", p, key, i, now, n, err)
				}
				if d.OK != wantOK || d.Wait != wantWait {
					t.Fatalf("%v/%s step %d: TakeAt(%d, %d) = %v %v, want %v %v", p, key, i, now, n, d.OK, d.Wait, wantOK, wantWait)
				}
				left := p.quota
				if _, v, err := stored(ctx, c, prefix(t)+key); err == nil {
					left = max(p.quota-int(v), 0)
				} else if !errors.Is(err, redis.Nil) {
					t.Fatal(err)
				}
				if want := pure.Left(now); left != want {
					t.Fatalf("%v/%s step %d: stored count leaves %d, want %d", p, key, i, left, want)
				}
				now = next(r, now, wantWait, p.period/time.Duration(p.quota))
			}
		}
	}
}

// TestSlidingMatchesPure drives rate.Sliding and the server's window through the same instants,
// in order but for jumps back past rate.MaxSkew (which both read as the clock stepping back:
// the window pulled back, full), with releases among the calls, and compares every decision,
// wait and count of stamps in the window.
func TestSlidingMatchesPure(t *testing.T) {
	c := client(t, shared)
	ctx := context.Background()
	policies := []struct {
		quota  int
		window time.Duration
	}{{1, time.Second}, {5, 100 * time.Millisecond}, {10, 3 * time.Second}, {3, 7 * time.Millisecond}}
	bases := []int64{1_780_000_000_123_456_000, 0, -5_000_000_000_000}
	r := rand.New(rand.NewPCG(5, 6))
	for pi, p := range policies {
		for bi, base := range bases {
			var clock atomic.Int64
			l, err := wardredis.NewSliding(c, prefix(t), p.quota, p.window, wardredis.WithKeep(time.Hour), wardredis.WithClock(clock.Load), wait)
			if err != nil {
				t.Fatal(err)
			}
			pure, err := rate.NewSliding(p.quota, p.window)
			if err != nil {
				t.Fatal(err)
			}
			key := strconv.Itoa(pi) + "/" + strconv.Itoa(bi)
			now, wantWait, jumped := base, time.Duration(0), false
			newest := now     // at or after the newest stamp: where a jump back starts from
			released := false // since the last stamp: no jump then, the pure window remembering a stamp let go
			for i := range 200 {
				clock.Store(now)
				if r.IntN(15) == 0 && !jumped {
					pure.Release(now)
					released = true
					if err := l.Release(ctx, key); err != nil {
						t.Fatalf("%v/%s step %d: Release at %d: %v", p, key, i, now, err)
					}
				} else {
					n := counts(r, p.quota)
					if jumped { // a call that pulls the window back, so both hold it full
						n = 1
					}
					var wantOK bool
					wantOK, wantWait = pure.TakeAt(now, n)
					d, err := l.TakeAt(ctx, key, now, n)
					if err != nil {
						t.Fatalf("%v/%s step %d: TakeAt(%d, %d): %v", p, key, i, now, n, err)
					}
					if d.OK != wantOK || d.Wait != wantWait {
						t.Fatalf("%v/%s step %d: TakeAt(%d, %d) = %v %v, want %v %v", p, key, i, now, n, d.OK, d.Wait, wantOK, wantWait)
					}
					if wantOK && n > 0 || jumped {
						newest, released = now, false
					}
				}
				in, err := c.ZCount(ctx, prefix(t)+key, "("+strconv.FormatInt((now-int64(p.window))/1000, 10), "+inf").Result()
				if err != nil {
					t.Fatal(err)
				}
				if left, want := p.quota-int(in), pure.Left(now); left != want {
					t.Fatalf("%v/%s step %d: %d stamps in the window leave %d, want %d", p, key, i, in, left, want)
				}
				jumped = r.IntN(60) == 0 && !released
				if jumped { // the clock steps back past MaxSkew from the newest stamp
					now = newest - int64(rate.MaxSkew) - int64(time.Duration(1+r.IntN(5))*time.Second)
				} else if wantWait > 0 && wantWait < time.Hour && r.IntN(2) == 0 {
					now += int64(wantWait) + int64(r.IntN(2))*1000 // the boundary, or just past it
				} else if r.IntN(4) > 0 {
					now += r.Int64N(int64(p.window) / int64(p.quota))
				}
				now = now / 1000 * 1000
			}
		}
	}
}
