package wardprom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/internal/testkit/calls"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/wardhttp"
)

// tallies are the calls a test made of one guard, counted by the test itself.
type tallies = calls.Tallies

// scrape reads the collector through promhttp, as Prometheus does, and returns every sample as
// "name{label=value,…}" → value.
func scrape(t *testing.T, srv *httptest.Server) map[string]float64 {
	t.Helper()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Error(err) // not Fatal: it also runs on a goroutine of its own
		return nil
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Error(err)
		return nil
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			k := name + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[k] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[k] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[k+"count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// check compares a guard's exported counts with the calls the test made.
func check(t *testing.T, got map[string]float64, kind, name, reason string, c *tallies) {
	t.Helper()
	l := "kind=" + kind + ",name=" + name
	for k, want := range map[string]int64{
		"svc_ward_admitted_total{" + l + "}":                      c.Admitted.Load(),
		"svc_ward_refused_total{" + l + ",reason=" + reason + "}": c.Refused.Load(),
		"svc_ward_abandoned_total{" + l + "}":                     c.Abandoned.Load(),
		"svc_ward_settled_total{" + l + ",outcome=pass}":          c.Pass.Load(),
		"svc_ward_settled_total{" + l + ",outcome=fail}":          c.Fail.Load(),
		"svc_ward_settled_total{" + l + ",outcome=ignore}":        c.Ignore.Load(),
	} {
		if v, ok := got[k]; !ok || v != float64(want) {
			t.Errorf("%s = %v (present %v), want %d", k, v, ok, want)
		}
	}
}

// TestUnderLoad scrapes while goroutines call every guard and finds, once they are done,
// admitted, refused, abandoned and settled counts equal to the calls made, counters that never
// went down between scrapes, and every host's breaker of a Transport without adding any.
func TestUnderLoad(t *testing.T) {
	ld, err := calls.NewLoad()
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close()
	fixed, _ := adaptive.NewFixed(3)
	q2lim, _ := adaptive.New(fixed, adaptive.WithClock(ld.Clock))
	q2, _ := adaptive.NewQueue(q2lim, adaptive.WithMaxWait(time.Hour))
	budget, _ := wardhttp.NewRetryBudget(10, 0.1)

	c := New("svc")
	for _, err := range []error{c.Limiter("api", ld.Limiter), c.Partitions("parts", ld.Parts), c.Queue("line", ld.Queue), c.Queue("line2", q2),
		c.Breaker("db", ld.Breaker), c.RetryBudget("retries", budget), c.Rate("bucket", ld.Bucket), c.Rate("sliding", ld.Sliding),
		c.Rate("period", ld.Period), c.FailureWindow("logins", ld.Logins), c.Pool("conns", ld.Pool), c.Shedder("front", ld.Shedder)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}))
	defer srv.Close()

	var cr tallies // the retry budget's: retries allowed and refused, attempts settled
	retry := func(_, i int) {
		if budget.Allow() {
			cr.Admitted.Add(1)
		} else {
			cr.Refused.Add(1)
		}
		if i%4 == 0 {
			budget.Fail()
			cr.Fail.Add(1)
		} else {
			budget.Pass()
			cr.Pass.Add(1)
		}
	}
	// scrape while the calls run: counters never go down
	done := make(chan struct{})
	var scrapes []map[string]float64
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			scrapes = append(scrapes, scrape(t, srv))
		}
	}()
	ld.Run(8, 600, retry)
	<-done
	// a caller that gives up while it waits in the Queue's line: abandoned
	var cq2 tallies
	var held []ward.Admission
	for len(held) < 3 {
		h, err := q2.Admit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
		cq2.Admitted.Add(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error)
	go func() { _, err := q2.Admit(ctx); gave <- err }()
	for q2.Waiting() == 0 {
		runtime.Gosched()
	}
	if w := scrape(t, srv)["svc_ward_queue_waiting{name=line2}"]; w != 1 {
		t.Errorf("queue_waiting = %v with one caller in line, want 1", w)
	}
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose ctx ended: %v", err)
	}
	cq2.Abandoned.Add(1)
	for i := range held {
		held[i].Pass()
		cq2.Pass.Add(1)
	}
	got := scrape(t, srv)
	for i, s := range scrapes {
		next := got
		if i+1 < len(scrapes) {
			next = scrapes[i+1]
		}
		for k, v := range s {
			if strings.Contains(k, "_total{") && next[k] < v {
				t.Errorf("scrape %d: %s went down from %v to %v", i, k, v, next[k])
			}
		}
	}
	check(t, got, "adaptive", "api", "limit", &ld.L)
	check(t, got, "partition", "parts/live", "partition", ld.PartsT["live"])
	check(t, got, "partition", "parts/batch", "partition", ld.PartsT["batch"])
	check(t, got, "breaker", "db", "breaker", &ld.B)
	check(t, got, "queue", "line", "queue", &ld.Q)
	check(t, got, "queue", "line2", "queue", &cq2)
	check(t, got, "retry_budget", "retries", "retry", &cr)
	check(t, got, "rate", "bucket", "rate", &ld.BucketT)
	check(t, got, "rate", "sliding", "rate", &ld.SlidingT)
	check(t, got, "rate", "period", "rate", &ld.PeriodT)
	check(t, got, "failurewindow", "logins", "failures", &ld.LoginsT)
	check(t, got, "pool", "conns", "pool", &ld.PoolT)
	check(t, got, "shed", "front", "overload", &ld.S)
	if v := got["svc_ward_in_flight{kind=pool,name=conns}"]; v != 0 {
		t.Errorf("pool in flight %v after every loan ended", v)
	}
	// every timed call of the limiter is in its histogram (WithSampleEvery(1): every passed or
	// failed call), and the limiter's own calls are all settled
	if h, want := got["svc_ward_call_duration_seconds{kind=adaptive,name=api}count"], float64(ld.L.Pass.Load()+ld.L.Fail.Load()); h != want {
		t.Errorf("histogram count %v, want %v", h, want)
	}
	// every pass of the shedder is timed (WithSampleEvery(1)); it times no failure
	if h, want := got["svc_ward_call_duration_seconds{kind=shed,name=front}count"], float64(ld.S.Pass.Load()); h != want {
		t.Errorf("shedder histogram count %v, want %v", h, want)
	}
	if v := got["svc_ward_in_flight{kind=adaptive,name=api}"]; v != 0 {
		t.Errorf("in flight %v after every call settled", v)
	}
	for _, c := range ld.All() {
		if c.Admitted.Load() == 0 || c.Refused.Load() == 0 {
			t.Errorf("a guard admitted %d and refused %d: the load did not reach both", c.Admitted.Load(), c.Refused.Load())
		}
	}
}

// TestTransportHosts: a Transport's per-host breakers appear in a scrape as the Transport makes
// them, without adding them; a host added later appears in the next scrape.
func TestTransportHosts(t *testing.T) {
	var hosts []*httptest.Server
	for i := 0; i < 3; i++ {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		defer s.Close()
		hosts = append(hosts, s)
	}
	tr, err := wardhttp.NewTransport(http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	c := New("svc")
	if err := c.Transport("out", tr); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}))
	defer srv.Close()
	client := &http.Client{Transport: tr}
	get := func(s *httptest.Server, n int) {
		for i := 0; i < n; i++ {
			resp, err := client.Get(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	host := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }
	get(hosts[0], 3)
	get(hosts[1], 2)
	got := scrape(t, srv)
	for _, h := range []struct {
		s *httptest.Server
		n float64
	}{{hosts[0], 3}, {hosts[1], 2}} {
		k := fmt.Sprintf("svc_ward_settled_total{kind=breaker,name=out/%s,outcome=pass}", host(h.s))
		if got[k] != h.n {
			t.Errorf("%s = %v, want %v", k, got[k], h.n)
		}
	}
	if k := fmt.Sprintf("svc_ward_admitted_total{kind=breaker,name=out/%s}", host(hosts[2])); got[k] != 0 {
		t.Errorf("%s present before any call to it", k)
	}
	get(hosts[2], 1)
	got = scrape(t, srv)
	if k := fmt.Sprintf("svc_ward_admitted_total{kind=breaker,name=out/%s}", host(hosts[2])); got[k] != 1 {
		t.Errorf("%s = %v after one call, want 1", k, got[k])
	}
}

// TestDuplicate: a name used twice for one kind fails when it is added, and the scrape stays
// whole; the same name for two kinds is two series.
func TestDuplicate(t *testing.T) {
	b1, _ := breaker.New()
	b2, _ := breaker.New()
	rule, _ := adaptive.NewFixed(1)
	lim, _ := adaptive.New(rule)
	c := New("svc")
	if err := c.Breaker("db", b1); err != nil {
		t.Fatal(err)
	}
	if err := c.Breaker("db", b2); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second breaker under one name: %v, want ErrDuplicate", err)
	}
	if err := c.Limiter("db", lim); err != nil {
		t.Fatalf("a limiter under a breaker's name: %v", err)
	}
	ps, _ := adaptive.NewPartitions(lim, adaptive.Share{Name: "a", Fraction: 1})
	if err := c.Partitions("p", ps); err != nil {
		t.Fatal(err)
	}
	if err := c.Partitions("p", ps); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("partitions added twice: %v, want ErrDuplicate", err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// TestNotCounting: a rate limiter that counts nothing (built without rate.WithCounts) is an error
// to add, through Rate or Guard, and a second rate limiter under one name is a duplicate.
func TestNotCounting(t *testing.T) {
	quiet, _ := rate.NewBucketLimiter(1, 1)
	counting, _ := rate.NewBucketLimiter(1, 1, rate.WithCounts())
	c := New("svc")
	if err := c.Rate("quiet", quiet); err == nil {
		t.Fatal("Rate of a limiter built without WithCounts: no error")
	}
	if err := c.Guard("rate", "quiet", "rate", quiet); err == nil {
		t.Fatal("Guard of a limiter built without WithCounts: no error")
	}
	if err := c.Rate("clients", counting); err != nil {
		t.Fatal(err)
	}
	if err := c.Rate("clients", counting); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a second rate limiter under one name: %v, want ErrDuplicate", err)
	}
}
