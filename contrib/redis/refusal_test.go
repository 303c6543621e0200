package wardredis_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/wardgo/ward/breaker"
	wardredis "github.com/wardgo/ward/contrib/redis"
	"github.com/wardgo/ward/internal/testkit"
)

// server starts a redis-server of the test's own, stopped when the test ends.
func server(t *testing.T) *testkit.Redis {
	t.Helper()
	path, err := testkit.RedisPath()
	if err != nil {
		t.Fatal(err)
	}
	s, err := testkit.StartRedis(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// stillBreaker returns a breaker on a clock that stands still and a fixed draw: whether it
// refuses depends on the outcomes settled on it alone.
func stillBreaker(t *testing.T) *breaker.Breaker {
	t.Helper()
	var now atomic.Int64
	b, err := breaker.New(breaker.WithClock(now.Load), breaker.WithRefresh(0), breaker.WithRand(func() float64 { return 0.5 }))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServerRefusing: a server that answers with an error (out of memory, a read-only
// replica) is a store failure: counted as an error, not garbage, settled on the breaker as a
// failure, so the breaker opens and sheds the calls.
func TestServerRefusing(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T, admin *redis.Client){
		"OOM": func(t *testing.T, a *redis.Client) {
			must(t, a, "CONFIG", "SET", "maxmemory-policy", "noeviction")
			must(t, a, "CONFIG", "SET", "maxmemory", "1")
		},
		"READONLY": func(t *testing.T, a *redis.Client) {
			primary := server(t)
			must(t, a, "REPLICAOF", "127.0.0.1", strconv.Itoa(primary.Port))
		},
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			s := server(t)
			c := client(t, s)
			l, err := wardredis.NewBucket(c, prefix(t), 1, 10, wardredis.WithBreaker(stillBreaker(t)), wait)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := l.Take(ctx, "k", 1); err != nil || !d.OK {
				t.Fatalf("before: %+v, %v", d, err)
			}
			breakIt(t, client(t, s))
			broken := false
			for i := 0; i < 100 && !broken; i++ {
				d, err := l.Take(ctx, "k", 1)
				if err == nil || d.OK || d.By != wardredis.Failed {
					t.Fatalf("call %d on a refusing server: %+v, %v", i, d, err)
				}
				if errors.Is(err, wardredis.ErrGarbage) {
					t.Fatalf("call %d: %v: a server refusing is not garbage", i, err)
				}
				broken = errors.Is(err, breaker.ErrUnavailable)
			}
			st := l.Stats()
			if !broken || st.Garbage != 0 || st.Errors == 0 || st.Broken == 0 {
				t.Fatalf("the breaker never opened on a refusing server: %+v", st)
			}
		})
	}
}

// must runs an admin command, failing the test if it fails.
func must(t *testing.T, c *redis.Client, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patient)
	defer cancel()
	if err := c.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}
