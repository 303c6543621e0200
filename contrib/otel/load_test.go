package wardotel

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/internal/testkit/calls"
	"github.com/wardgo/ward/rate"
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
	ld, err := calls.NewLoad()
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close()
	host := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer host.Close()
	tr, _ := wardhttp.NewTransport(http.DefaultTransport)

	srcs := []Source{Limiter("api", ld.Limiter), Partitions("parts", ld.Parts), Queue("line", ld.Queue), Breaker("db", ld.Breaker),
		Transport("out", tr), Rate("bucket", ld.Bucket), Rate("sliding", ld.Sliding), Rate("period", ld.Period),
		FailureWindow("logins", ld.Logins), Pool("conns", ld.Pool), Shedder("front", ld.Shedder)}
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

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			collect(t, reader)
		}
	}()
	ld.Run(8, 400, nil)
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
	check(t, got, "adaptive", "api", "limit", &ld.L)
	check(t, got, "partition", "parts/live", "partition", ld.PartsT["live"])
	check(t, got, "partition", "parts/batch", "partition", ld.PartsT["batch"])
	check(t, got, "breaker", "db", "breaker", &ld.B)
	check(t, got, "queue", "line", "queue", &ld.Q)
	check(t, got, "rate", "bucket", "rate", &ld.BucketT)
	check(t, got, "rate", "sliding", "rate", &ld.SlidingT)
	check(t, got, "rate", "period", "rate", &ld.PeriodT)
	check(t, got, "failurewindow", "logins", "failures", &ld.LoginsT)
	check(t, got, "pool", "conns", "pool", &ld.PoolT)
	check(t, got, "shed", "front", "overload", &ld.S)
	if v, ok := got["ward.in_flight{pool,conns}"]; !ok || v != 0 {
		t.Errorf("pool in flight %v (present %v) after every loan ended, want 0", v, ok)
	}
	if h, want := got["ward.call.duration{adaptive,api}count"], float64(ld.L.Pass.Load()+ld.L.Fail.Load()); h != want {
		t.Errorf("histogram count %v, want %v", h, want)
	}
	// every pass of the shedder is timed (WithSampleEvery(1)); it times no failure
	if h, want := got["ward.call.duration{shed,front}count"], float64(ld.S.Pass.Load()); h != want {
		t.Errorf("shedder histogram count %v, want %v", h, want)
	}
	u, _ := url.Parse(host.URL)
	if k := "ward.settled{breaker,out/" + u.Host + ",pass}"; got[k] != 2 {
		t.Errorf("%s = %v, want 2: a host's breaker made after Register", k, got[k])
	}
	if k := "ward.retry_budget.tokens{out}"; got[k] != wardhttp.DefaultRetryTokens {
		t.Errorf("%s = %v, want %v", k, got[k], wardhttp.DefaultRetryTokens)
	}
	for _, c := range ld.All() {
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
