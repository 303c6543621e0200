package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	wardredis "github.com/wardgo/ward/contrib/redis"
)

// A quota that binds: four limiters on one key stand for four processes of a fleet (each with
// its own leases), and the -cpu goroutines call them in turn, far faster than the quota allows.
const (
	quotaProcs  = 4
	quotaRate   = 5_000 // a second, for the buckets
	quotaBurst  = 500
	quotaPeriod = 100 * time.Millisecond // aligned periods of quotaBurst calls
	quotaLife   = 10 * time.Millisecond  // a lease's life
	quotaLease  = 100                    // the most a lease asks for
)

// quotaImpl makes one limiter of the fleet; the bound is the most the fleet may admit between
// the instants start and end (Unix nanoseconds, the server's clock being this machine's).
type quotaImpl struct {
	name  string
	make  func(b *testing.B, c *redis.Client, key string) func(ctx context.Context) bool
	quota func(start, end int64) float64
}

func bucketQuota(start, end int64) float64 {
	return quotaBurst + quotaRate*float64(end-start)/1e9
}

func periodQuota(start, end int64) float64 {
	p := int64(quotaPeriod)
	return float64(quotaBurst * (end/p - start/p + 1))
}

func wardTake(l *wardredis.Limiter, err error, b *testing.B, key string) func(context.Context) bool {
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) bool { d, _ := l.Take(ctx, key, 1); return d.OK }
}

var quotaImpls = []quotaImpl{
	{"ward", func(b *testing.B, c *redis.Client, key string) func(context.Context) bool {
		l, err := wardredis.NewBucket(c, "", quotaRate, quotaBurst)
		return wardTake(l, err, b, key)
	}, bucketQuota},
	{"ward-lease", func(b *testing.B, c *redis.Client, key string) func(context.Context) bool {
		l, err := wardredis.NewBucket(c, "", quotaRate, quotaBurst, wardredis.WithLease(quotaLease, quotaLife))
		return wardTake(l, err, b, key)
	}, bucketQuota},
	{"redis_rate", func(b *testing.B, c *redis.Client, key string) func(context.Context) bool {
		l := redis_rate.NewLimiter(c)
		limit := redis_rate.Limit{Rate: quotaRate, Burst: quotaBurst, Period: time.Second}
		return func(ctx context.Context) bool {
			r, err := l.Allow(ctx, key, limit)
			return err == nil && r.Allowed > 0
		}
	}, bucketQuota},
	{"ward-period", func(b *testing.B, c *redis.Client, key string) func(context.Context) bool {
		l, err := wardredis.NewPeriod(c, "", quotaBurst, quotaPeriod, true)
		return wardTake(l, err, b, key)
	}, periodQuota},
	{"ward-period-lease", func(b *testing.B, c *redis.Client, key string) func(context.Context) bool {
		l, err := wardredis.NewPeriod(c, "", quotaBurst, quotaPeriod, true, wardredis.WithLease(quotaLease, quotaLife))
		return wardTake(l, err, b, key)
	}, periodQuota},
}

// BenchmarkRedisOverAdmit hammers one key whose quota binds, from four limiters (a fleet of
// four processes) over the -cpu goroutines: admit/quota is what the fleet admitted over what
// the quota allows over the run (a bucket: burst + rate × the run's length; a period: the quota
// times the periods the run touched), which must not pass 1 (a leasing bucket may pass it by at
// most rate × a lease's life, the bound its package doc states: bound/quota is that bound
// over the quota); trips/admit the server's script calls per admitted call; ns/op is per call,
// refused or not.
func BenchmarkRedisOverAdmit(b *testing.B) {
	for _, impl := range quotaImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			addr := redisServer(b)
			c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 32})
			defer c.Close()
			key := "bench:quota:" + impl.name + ":" + strconv.FormatInt(redisRun.Add(1), 10)
			var fleet [quotaProcs]func(context.Context) bool
			for i := range fleet {
				fleet[i] = impl.make(b, c, key)
			}
			ctx := context.Background()
			var admitted, next atomic.Int64
			before := trips(b, c)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now().UnixNano()
			b.RunParallel(func(pb *testing.PB) {
				take := fleet[next.Add(1)%quotaProcs]
				n := int64(0)
				for pb.Next() {
					if take(ctx) {
						n++
					}
				}
				admitted.Add(n)
			})
			end := time.Now().UnixNano()
			b.StopTimer()
			a := float64(admitted.Load())
			quota := impl.quota(start, end)
			b.ReportMetric(a/quota, "admit/quota")
			if a > 0 {
				b.ReportMetric(float64(trips(b, c)-before)/a, "trips/admit")
			}
			if impl.name == "ward-lease" {
				b.ReportMetric((quota+quotaRate*quotaLife.Seconds())/quota, "bound/quota")
			}
		})
	}
}
