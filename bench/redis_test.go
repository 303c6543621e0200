package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	wardredis "github.com/wardgo/ward/contrib/redis"
	zlimit "github.com/zeromicro/go-zero/core/limit"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/wardgo/ward/internal/testkit"
)

// The Redis benchmarks run against a redis-server this test binary starts on a free loopback
// port (no persistence) the first time one needs it, and stops when the binary exits. Without
// redis-server on PATH they skip, or fail when CI=true.

var (
	redisOnce sync.Once
	redisSrv  *testkit.Redis
	redisErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if redisSrv != nil {
		redisSrv.Stop()
	}
	os.Exit(code)
}

// redisServer returns the address of the shared redis-server, starting it once.
func redisServer(b *testing.B) string {
	redisOnce.Do(func() {
		path, err := testkit.RedisPath()
		if err == nil {
			redisSrv, err = testkit.StartRedis(path, 0)
		}
		redisErr = err
	})
	if redisErr != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("Redis benchmarks need redis-server with CI=true: ", redisErr)
		}
		b.Skip("Redis benchmarks skipped: ", redisErr)
	}
	return redisSrv.Addr()
}

// trips returns how many script calls (EVAL, EVALSHA: a round trip each, for every limiter
// here) the server has answered, as INFO commandstats counts them.
func trips(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if v, ok := strings.CutPrefix(line, cmd); ok {
				v, _, _ = strings.Cut(v, ",")
				k, _ := strconv.ParseInt(v, 10, 64)
				n += k
			}
		}
	}
	return n
}

// redisImpl is one shared limiter: take decides one call on the hot key.
type redisImpl struct {
	name string
	make func(b *testing.B, c *redis.Client, addr, key string) func(ctx context.Context) bool
}

// Hot keys whose quota is far above what the benchmark asks for: every call is admitted, so
// ns/op is the cost of a decision and trips/admit the round trips each admitted call cost.
const (
	hotRate  = 10_000_000 // a second
	hotBurst = 10_000_000 // go-zero's token script needs a fill time of at least 1 s
)

var redisImpls = []redisImpl{
	{"ward", func(b *testing.B, c *redis.Client, _, key string) func(context.Context) bool {
		l, err := wardredis.NewBucket(c, "", hotRate, hotBurst)
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context) bool { d, _ := l.Take(ctx, key, 1); return d.OK }
	}},
	{"ward-lease", func(b *testing.B, c *redis.Client, _, key string) func(context.Context) bool {
		l, err := wardredis.NewBucket(c, "", hotRate, hotBurst, wardredis.WithLease(1000, 10*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context) bool { d, _ := l.Take(ctx, key, 1); return d.OK }
	}},
	{"redis_rate", func(b *testing.B, c *redis.Client, _, key string) func(context.Context) bool {
		l := redis_rate.NewLimiter(c)
		limit := redis_rate.Limit{Rate: hotRate, Burst: hotBurst, Period: time.Second}
		return func(ctx context.Context) bool {
			r, err := l.Allow(ctx, key, limit)
			return err == nil && r.Allowed > 0
		}
	}},
	{"go-zero-token", func(b *testing.B, _ *redis.Client, addr, key string) func(context.Context) bool {
		l := zlimit.NewTokenLimiter(hotRate, hotBurst, zredis.New(addr), key)
		return func(ctx context.Context) bool { return l.AllowCtx(ctx) }
	}},
	{"ward-period", func(b *testing.B, c *redis.Client, _, key string) func(context.Context) bool {
		l, err := wardredis.NewPeriod(c, "", hotBurst, time.Second, false)
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context) bool { d, _ := l.Take(ctx, key, 1); return d.OK }
	}},
	{"ward-period-lease", func(b *testing.B, c *redis.Client, _, key string) func(context.Context) bool {
		l, err := wardredis.NewPeriod(c, "", hotBurst, time.Second, false, wardredis.WithLease(1000, 10*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context) bool { d, _ := l.Take(ctx, key, 1); return d.OK }
	}},
	{"go-zero-period", func(b *testing.B, _ *redis.Client, addr, key string) func(context.Context) bool {
		l := zlimit.NewPeriodLimit(1, hotBurst, zredis.New(addr), "")
		return func(ctx context.Context) bool {
			r, err := l.TakeCtx(ctx, key)
			return err == nil && (r == zlimit.Allowed || r == zlimit.HitQuota)
		}
	}},
}

var redisRun atomic.Int64

// BenchmarkRedisAdmit is one admitted call on a hot shared key, from b.N calls over the -cpu
// goroutines: ns/op per decision, trips/admit the Redis commands per admitted call (counted by
// the server), admit/op the share admitted (1 when nothing was refused).
func BenchmarkRedisAdmit(b *testing.B) {
	for _, impl := range redisImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			addr := redisServer(b)
			c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 32})
			defer c.Close()
			key := "bench:" + impl.name + ":" + strconv.FormatInt(redisRun.Add(1), 10)
			take := impl.make(b, c, addr, key)
			ctx := context.Background()
			take(ctx) // warm: the script loaded, a connection made
			var admitted atomic.Int64
			before := trips(b, c)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				n := int64(0)
				for pb.Next() {
					if take(ctx) {
						n++
					}
				}
				admitted.Add(n)
			})
			b.StopTimer()
			if a := admitted.Load(); a > 0 {
				b.ReportMetric(float64(trips(b, c)-before)/float64(a), "trips/admit")
			}
			b.ReportMetric(float64(admitted.Load())/float64(b.N), "admit/op")
		})
	}
}
