package wardotel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/internal/testkit/calls"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

// tallies are the calls a test made of one guard, counted by the test itself.
type tallies = calls.Tallies

// collect returns every data point the reader collects as "name{kind,name,reason|outcome}".
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Error(err) // not Fatal: it also runs on a goroutine of its own
		return nil
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+key(p.Attributes)] = p.Value
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+key(p.Attributes)+"count"] = float64(p.Count)
				}
			}
		}
	}
	return got
}

func check(t *testing.T, got map[string]float64, kind, name, reason string, c *tallies) {
	t.Helper()
	l := "{" + kind + "," + name
	for k, want := range map[string]int64{
		"ward.admitted" + l + "}":               c.Admitted.Load(),
		"ward.refused" + l + "," + reason + "}": c.Refused.Load(),
		"ward.settled" + l + ",pass}":           c.Pass.Load(),
		"ward.settled" + l + ",fail}":           c.Fail.Load(),
		"ward.settled" + l + ",ignore}":         c.Ignore.Load(),
	} {
		if v, ok := got[k]; !ok || v != float64(want) {
			t.Errorf("%s = %v (present %v), want %d", k, v, ok, want)
		}
	}
}

// TestUnderLoad collects while goroutines call every guard, and finds, once they are done, the
// admitted, refused and settled counts equal to the calls made; the limiter's histogram holds
// every timed call; a Transport's host breakers appear as the Transport makes them, without
// registering again.
func TestUnderLoad(t *testing.T) {
	var tick atomic.Int64
	clk := func() int64 { return tick.Add(int64(time.Millisecond)) }
	fixed, _ := adaptive.NewFixed(3)
	lim, _ := adaptive.New(fixed, adaptive.WithClock(clk), adaptive.WithSampleEvery(1))
	plim, _ := adaptive.New(fixed, adaptive.WithClock(clk))
	ps, _ := adaptive.NewPartitions(plim, adaptive.Share{Name: "live", Fraction: 0.5}, adaptive.Share{Name: "batch", Fraction: 0.5})
	qlim, _ := adaptive.New(fixed, adaptive.WithClock(clk))
	q, _ := adaptive.NewQueue(qlim, adaptive.WithQueueSize(2), adaptive.WithMaxWait(time.Millisecond))
	var roll atomic.Uint64
	brk, _ := breaker.New(breaker.WithClock(clk), breaker.WithRand(func() float64 { return float64(roll.Add(1)%100) / 100 }))
	host := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer host.Close()
	tr, _ := wardhttp.NewTransport(http.DefaultTransport)
	bucket, _ := rate.NewBucketLimiter(10, 5, rate.WithClock(clk), rate.WithCounts())
	sliding, _ := rate.NewSlidingLimiter(5, 100*time.Millisecond, rate.WithClock(clk))
	period, _ := rate.NewPeriodLimiter(5, 100*time.Millisecond, false, rate.WithClock(clk), rate.WithCounts())
	fw, _ := failurewindow.New(3, time.Second, failurewindow.WithClock(clk),
		failurewindow.WithOwnError(func(err error) bool { return errors.Is(err, calls.ErrOwn) }))
	// a shedder on a CPU always hot, every call timed: it refuses when the calls held at once
	// outgrow what its window shows
	shd, _ := shed.New(shed.WithClock(clk), shed.WithCPU(func() int { return 1000 }), shed.WithSampleEvery(1))
	makes, _ := rate.NewBucket(1, 2, 0) // the pool's ward: a make a second of its clock, 2 at once
	part, _ := pool.FromBucket(makes)
	var ids atomic.Int64 // every resource opened is a new one
	pl, err := pool.New(func(context.Context) (int, error) { return int(ids.Add(1)), nil }, func(int) {}, pool.Limits{Size: 4, Idle: 4},
		pool.WithClock(clk), pool.WithWard(pool.Ward{Bucket: part}))
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()

	srcs := []Source{Limiter("api", lim), Partitions("parts", ps), Queue("line", q), Breaker("db", brk), Transport("out", tr),
		Rate("bucket", bucket), Rate("sliding", sliding), Rate("period", period), FailureWindow("logins", fw), Pool("conns", pl),
		Shedder("front", shd)}
	prod, err := Producer(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(prod))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	reg, err := Register(mp.Meter("test"), srcs...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()

	var cl, cb, cq, cbucket, csliding, cperiod, cfw, cpool, cs tallies
	cparts := map[string]*tallies{"live": {}, "batch": {}}
	const workers, each = 8, 400
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				ctx := context.Background()
				nested := 0
				if i%7 == 0 {
					nested = 3 // a fourth call held at once: past the limit of 3
				}
				cl.Call(ctx, lim, i+w, nested)
				part := "live"
				if w%2 == 1 {
					part = "batch"
				}
				cparts[part].Call(ctx, ps.Partition(part), i, nested)
				cb.Call(ctx, brk, []int{0, 1, 1, 2, 1, 1}[i%6], 0) // mostly failures: the breaker opens
				cq.Call(ctx, q, i, nested)
				cs.Call(ctx, shd, i, nested)
				cbucket.Gate(ctx, bucket)
				csliding.Gate(ctx, sliding)
				cperiod.Gate(ctx, period)
				cfw.Login(ctx, fw, fmt.Sprint("10.0.0.", w), i)
				cpool.Borrow(ctx, pl, i)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			collect(t, reader)
		}
	}()
	close(start)
	wg.Wait()
	<-done
	client := &http.Client{Transport: tr}
	for i := 0; i < 2; i++ {
		resp, err := client.Get(host.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := collect(t, reader)
	check(t, got, "adaptive", "api", "limit", &cl)
	check(t, got, "partition", "parts/live", "partition", cparts["live"])
	check(t, got, "partition", "parts/batch", "partition", cparts["batch"])
	check(t, got, "breaker", "db", "breaker", &cb)
	check(t, got, "queue", "line", "queue", &cq)
	check(t, got, "rate", "bucket", "rate", &cbucket)
	check(t, got, "rate", "sliding", "rate", &csliding)
	check(t, got, "rate", "period", "rate", &cperiod)
	check(t, got, "failurewindow", "logins", "failures", &cfw)
	check(t, got, "pool", "conns", "pool", &cpool)
	check(t, got, "shed", "front", "overload", &cs)
	if v, ok := got["ward.in_flight{pool,conns}"]; !ok || v != 0 {
		t.Errorf("pool in flight %v (present %v) after every loan ended, want 0", v, ok)
	}
	if h, want := got["ward.call.duration{adaptive,api}count"], float64(cl.Pass.Load()+cl.Fail.Load()); h != want {
		t.Errorf("histogram count %v, want %v", h, want)
	}
	// every pass of the shedder is timed (WithSampleEvery(1)); it times no failure
	if h, want := got["ward.call.duration{shed,front}count"], float64(cs.Pass.Load()); h != want {
		t.Errorf("shedder histogram count %v, want %v", h, want)
	}
	u, _ := url.Parse(host.URL)
	if k := "ward.settled{breaker,out/" + u.Host + ",pass}"; got[k] != 2 {
		t.Errorf("%s = %v, want 2: a host's breaker made after Register", k, got[k])
	}
	if k := "ward.retry_budget.tokens{out}"; got[k] != wardhttp.DefaultRetryTokens {
		t.Errorf("%s = %v, want %v", k, got[k], wardhttp.DefaultRetryTokens)
	}
	for _, c := range []*tallies{&cl, &cb, &cq, cparts["live"], cparts["batch"], &cbucket, &csliding, &cperiod, &cfw, &cpool, &cs} {
		if c.Admitted.Load() == 0 || c.Refused.Load() == 0 {
			t.Errorf("a guard admitted %d and refused %d: the load did not reach both", c.Admitted.Load(), c.Refused.Load())
		}
	}
}

// TestDuplicate: two sources of one kind under one name fail at Register and at Producer.
func TestDuplicate(t *testing.T) {
	b1, _ := breaker.New()
	b2, _ := breaker.New()
	mp := sdkmetric.NewMeterProvider()
	defer func() { _ = mp.Shutdown(context.Background()) }()
	if _, err := Register(mp.Meter("test"), Breaker("db", b1), Breaker("db", b2)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Register: %v, want ErrDuplicate", err)
	}
	if _, err := Producer(Breaker("db", b1), Breaker("db", b2)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Producer: %v, want ErrDuplicate", err)
	}
	rule, _ := adaptive.NewFixed(1)
	lim, _ := adaptive.New(rule)
	if _, err := Register(mp.Meter("test"), Breaker("db", b1), Limiter("db", lim)); err != nil {
		t.Fatalf("one name for two kinds: %v", err)
	}
}

// TestNotCounting: a rate limiter that counts nothing (built without rate.WithCounts) fails at
// Register and at Producer, through Rate or Guard.
func TestNotCounting(t *testing.T) {
	quiet, _ := rate.NewBucketLimiter(1, 1)
	mp := sdkmetric.NewMeterProvider()
	defer func() { _ = mp.Shutdown(context.Background()) }()
	for _, src := range []Source{Rate("quiet", quiet), Guard("rate", "quiet", "rate", quiet)} {
		if _, err := Register(mp.Meter("test"), src); err == nil {
			t.Error("Register of a limiter built without WithCounts: no error")
		}
		if _, err := Producer(src); err == nil {
			t.Error("Producer of a limiter built without WithCounts: no error")
		}
	}
	counting, _ := rate.NewBucketLimiter(1, 1, rate.WithCounts())
	if _, err := Register(mp.Meter("test"), Rate("clients", counting), Rate("clients", counting)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("two rate limiters under one name: %v, want ErrDuplicate", err)
	}
}
