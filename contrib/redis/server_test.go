package wardredis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	wardredis "github.com/wardgo/ward/contrib/redis"
	"github.com/wardgo/ward/internal/testkit"
)

// shared is the server every test but the fault tests uses; TestMain starts it.
var shared *testkit.Redis

// childEnv marks a process re-executed by TestFleet: it talks to the parent's server.
const childEnv = "WARDREDIS_CHILD"

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the fault tests make go-redis log every refused dial
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run())
	}
	path, err := testkit.RedisPath()
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "wardredis: redis-server is not on PATH, and CI=true: the Redis tests cannot run (apt-get install redis-server)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wardredis: SKIP: redis-server is not on PATH; install it (apt-get install redis-server) to run these tests")
		os.Exit(0)
	}
	shared, err = testkit.StartRedis(path, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wardredis:", err)
		os.Exit(1)
	}
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// patient is the store timeout of every test that checks what the store decides rather than how
// fast: on a loaded machine a round trip may take far longer than a limiter's default, and a
// test may be slow there, never wrong. Tests of timeouts set their own.
const patient = time.Minute

// wait is WithTimeout(patient), for the limiters of tests that do not measure time.
var wait = wardredis.WithTimeout(patient)

// client returns a client of s that respects contexts, closed when t ends. Its socket timeouts
// are patient too: only a context's deadline, set by the test or the limiter, bounds a call.
func client(t testing.TB, s *testkit.Redis) *redis.Client { return clientAt(t, s.Addr()) }

// clientAt is client for a server at addr.
func clientAt(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: patient, ReadTimeout: patient, WriteTimeout: patient,
		DialerRetries: 1, DialerRetryTimeout: time.Millisecond, PoolSize: 16})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), patient)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING %s: %v", addr, err)
	}
	return c
}

// runs numbers each run of a test (a test run again in the same process, -count, is a new
// testing.TB), so a run again starts from fresh keys too.
var (
	runs    sync.Map // testing.TB -> int64
	counter atomic.Int64
)

// prefix returns a key prefix of this run of the test, the same for every call within it, so
// tests and runs never share keys.
func prefix(t testing.TB) string {
	id, _ := runs.LoadOrStore(t, counter.Add(1))
	return "test:" + t.Name() + ":" + strconv.FormatInt(id.(int64), 10) + ":"
}
