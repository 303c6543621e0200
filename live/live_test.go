package live_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/live"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
)

// manual is a clock the test moves.
type manual struct{ t time.Time }

func (m *manual) now() time.Time      { return m.t }
func (m *manual) add(d time.Duration) { m.t = m.t.Add(d) }
func newManual() *manual              { return &manual{t: time.UnixMilli(1_700_000_000_000)} }
func mustPage(t *testing.T, opts ...live.Option) *live.Page {
	t.Helper()
	p, err := live.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type page struct {
	EveryMS int64    `json:"every_ms"`
	History int      `json:"history"`
	T       []int64  `json:"t"`
	Guards  []jguard `json:"guards"`
}
type jguard struct {
	Name   string    `json:"name"`
	Kind   string    `json:"kind"`
	Series []jseries `json:"series"`
}
type jseries struct {
	Name    string     `json:"name"`
	Unit    string     `json:"unit"`
	Counter bool       `json:"counter"`
	Now     *float64   `json:"now"`
	Total   *float64   `json:"total"`
	Values  []*float64 `json:"values"`
}

func decode(t *testing.T, b []byte) page {
	t.Helper()
	var p page
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	return p
}

func (p page) series(t *testing.T, guard, name string) jseries {
	t.Helper()
	for _, g := range p.Guards {
		if g.Name == guard {
			for _, s := range g.Series {
				if s.Name == name {
					return s
				}
			}
		}
	}
	t.Fatalf("no series %q of guard %q in %+v", name, guard, p.Guards)
	return jseries{}
}

// vals renders values with null as NaN, for comparison.
func vals(vs []*float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = math.NaN()
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

func same(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

func TestInvalid(t *testing.T) {
	for _, c := range []struct {
		opt   live.Option
		field string
	}{
		{live.WithClock(nil), "WithClock"},
		{live.WithEvery(0), "WithEvery"},
		{live.WithEvery(-time.Second), "WithEvery"},
		{live.WithEvery(time.Microsecond), "WithEvery"},
		{live.WithHistory(1), "WithHistory"},
		{live.WithHistory(live.MaxHistory + 1), "WithHistory"},
		{nil, "option"},
	} {
		p, err := live.New(c.opt)
		if p != nil || !errors.Is(err, live.ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New(%s) = %v, %v; want ErrInvalid naming %s", c.field, p, err, c.field)
		}
	}
	p := mustPage(t)
	rule, _ := adaptive.NewFixed(1)
	lim, _ := adaptive.New(rule)
	if err := p.Limiter("api", lim); err != nil {
		t.Fatal(err)
	}
	read := func(*live.Readings) {}
	for name, err := range map[string]error{
		"duplicate":      p.Limiter("api", lim),
		"duplicate Add":  p.Add("api", "mine", read),
		"empty name":     p.Limiter("", lim),
		"blank name":     p.Add("  ", "mine", read),
		"nil read":       p.Add("x", "mine", nil),
		"nil limiter":    p.Limiter("x", nil),
		"nil queue":      p.Queue("x", nil),
		"nil partition":  p.Partition("x", nil),
		"nil breaker":    p.Breaker("x", nil),
		"nil shedder":    p.Shedder("x", nil),
		"nil pool":       p.Pool("x", nil),
		"typed nil pool": p.Pool("x", (*pool.Pool[int])(nil)),
		"nil window":     p.FailureWindow("x", nil),
		"nil bucket":     p.Bucket("x", nil),
	} {
		if !errors.Is(err, live.ErrInvalid) || !errors.Is(err, ward.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if want := map[bool]string{true: "name", false: ""}[strings.Contains(name, "name") || strings.HasPrefix(name, "duplicate")]; want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to name %q", name, err, want)
		}
	}
	if got := len(decode(t, p.JSON()).Guards); got != 1 {
		t.Fatalf("after the rejected registrations %d guards, want 1", got)
	}
}

// TestSample walks when a sample is due: the first read, Every later, and a clock moved back.
func TestSample(t *testing.T) {
	m := newManual()
	p := mustPage(t, live.WithClock(m.now), live.WithEvery(time.Second))
	for i, c := range []struct {
		step time.Duration
		want bool
	}{
		{0, true},                       // the first sample
		{0, false},                      // same instant
		{999 * time.Millisecond, false}, // not yet Every
		{time.Millisecond, true},        // exactly Every after
		{10 * time.Second, true},        // long after
		{-time.Hour, true},              // the clock moved back
		{500 * time.Millisecond, false}, // Every counts from the back-moved sample
	} {
		m.add(c.step)
		if got := p.Sample(); got != c.want {
			t.Fatalf("step %d: Sample() after %v = %v, want %v", i, c.step, got, c.want)
		}
	}
	if got := len(decode(t, p.JSON()).T); got != 4 {
		t.Fatalf("samples held %d, want 4", got)
	}
}

// TestJSON drives a guard of the test's own through a ring of three samples: gauges, counter
// rates, a restart, a reading that comes and goes, and the ring's roll-over.
func TestJSON(t *testing.T) {
	m := newManual()
	p := mustPage(t, live.WithClock(m.now), live.WithHistory(3), live.WithEvery(time.Millisecond))
	type step struct {
		gauge, count float64
		extra        bool
	}
	var cur step
	if err := p.Add("mine", "my guard", func(r *live.Readings) {
		r.Gauge("level", "calls", cur.gauge)
		r.Counter("served", "calls/s", cur.count)
		if cur.extra {
			r.Gauge("extra", "", math.Inf(1)) // not a number: a gap
			r.Gauge("extra", "", 7)           // reported twice: the last wins
		}
	}); err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	for i, c := range []struct {
		at                 step
		dt                 time.Duration
		times              []int64 // offsets from the first sample, ms
		level, rate, extra []float64
		total              float64
	}{
		{step{5, 100, false}, 0, []int64{0}, []float64{5}, []float64{nan}, nil, 100},
		{step{6, 110, true}, time.Second, []int64{0, 1000}, []float64{5, 6}, []float64{nan, 10}, []float64{nan, 7}, 110},
		{step{7, 130, false}, 2 * time.Second, []int64{0, 1000, 3000}, []float64{5, 6, 7}, []float64{nan, 10, 10}, []float64{nan, 7, nan}, 130},
		// The ring rolls over; the count went down (a restart): no rate for that step.
		{step{8, 20, false}, 500 * time.Millisecond, []int64{1000, 3000, 3500}, []float64{6, 7, 8}, []float64{nan, 10, nan}, []float64{7, nan, nan}, 20},
		{step{9, 30, false}, 500 * time.Millisecond, []int64{3000, 3500, 4000}, []float64{7, 8, 9}, []float64{nan, nan, 20}, []float64{nan, nan, nan}, 30},
	} {
		m.add(c.dt)
		cur = c.at
		if !p.Sample() {
			t.Fatalf("step %d: no sample", i)
		}
		got := decode(t, p.JSON())
		if got.EveryMS != 1 || got.History != 3 || len(got.Guards) != 1 || got.Guards[0].Kind != "my guard" {
			t.Fatalf("step %d: header %+v", i, got)
		}
		for j, ts := range got.T {
			if ts-1_700_000_000_000 != c.times[j] || len(got.T) != len(c.times) {
				t.Fatalf("step %d: t = %v, want offsets %v", i, got.T, c.times)
			}
		}
		level, served := got.series(t, "mine", "level"), got.series(t, "mine", "served")
		if level.Counter || !served.Counter || level.Unit != "calls" || served.Unit != "calls/s" {
			t.Fatalf("step %d: kinds %+v %+v", i, level, served)
		}
		if g := vals(level.Values); !same(g, c.level) || *level.Now != c.level[len(c.level)-1] || level.Total != nil {
			t.Fatalf("step %d: level %v (now %v), want %v", i, g, *level.Now, c.level)
		}
		if g := vals(served.Values); !same(g, c.rate) || served.Total == nil || *served.Total != c.total {
			t.Fatalf("step %d: served rates %v total %v, want %v total %v", i, g, served.Total, c.rate, c.total)
		}
		if c.extra != nil {
			if g := vals(got.series(t, "mine", "extra").Values); !same(g, c.extra) {
				t.Fatalf("step %d: extra %v, want %v", i, g, c.extra)
			}
		}
	}
	if !p.Remove("mine") || p.Remove("mine") {
		t.Fatal("Remove: want true once, then false")
	}
	if got := decode(t, p.JSON()); len(got.Guards) != 0 || len(got.T) != 3 {
		t.Fatalf("after Remove: %+v, want no guards and the instants kept", got)
	}
	if err := p.Add("mine", "again", func(*live.Readings) {}); err != nil {
		t.Fatalf("a removed name registers again: %v", err)
	}
}

// TestTyped registers every typed source on real guards and reads what each shows.
func TestTyped(t *testing.T) {
	var now int64
	clk := func() int64 { return now }
	rule, _ := adaptive.NewFixed(3)
	lim, _ := adaptive.New(rule, adaptive.WithClock(clk))
	q, _ := adaptive.NewQueue(lim)
	ps, _ := adaptive.NewPartitions(lim, adaptive.Share{Name: "live", Fraction: 0.5})
	br, _ := breaker.New(breaker.WithClock(clk))
	sh, _ := shed.New(shed.WithClock(clk), shed.WithCPU(func() int { return 423 }))
	defer sh.Stop()
	pl, _ := pool.New(func(context.Context) (int, error) { return 1, nil }, func(int) {}, pool.DefaultLimits(), pool.WithClock(clk))
	defer pl.Close()
	fw, _ := failurewindow.New(3, time.Minute, failurewindow.WithClock(clk))
	bucket, err := rate.NewBucketLimiter(10, 5, rate.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}

	p := mustPage(t, live.WithClock(newManual().now))
	for _, err := range []error{
		p.Limiter("lim", lim), p.Queue("q", q), p.Partition("part", ps.Partition("live")), p.Breaker("br", br),
		p.Shedder("sh", sh), p.Pool("pool", pl), p.FailureWindow("fw", fw),
		p.Bucket("bucket", bucket),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, _ := lim.Acquire()
	b, _ := lim.Acquire()
	lim.Acquire() // the third
	if _, ok := lim.Acquire(); ok {
		t.Fatal("a fourth call admitted under a fixed limit of 3")
	}
	fw.Record("10.0.0.1")
	bucket.Allow()
	bucket.Allow()
	loan, err := pl.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Sample()
	got := decode(t, p.JSON())
	for _, c := range []struct {
		guard, series string
		want          float64
	}{
		{"lim", "limit", 3}, {"lim", "in flight", 3}, {"lim", "latency", 0}, {"lim", "refused", math.NaN()},
		{"q", "waiting", 0},
		{"part", "in flight", 0}, {"part", "guarantee", 1},
		{"br", "ratio", 0}, {"br", "refused", math.NaN()},
		{"sh", "cpu", 42.3}, {"sh", "in flight", 0}, {"sh", "hot", 0},
		{"pool", "lent", 1}, {"pool", "live", 1}, {"pool", "idle", 0}, {"pool", "waiting", 0},
		{"fw", "keys", 1}, {"fw", "stored", 1},
		{"bucket", "tokens", 3},
	} {
		s := got.series(t, c.guard, c.series)
		v := math.NaN()
		if s.Now != nil {
			v = *s.Now
		}
		if !same([]float64{v}, []float64{c.want}) {
			t.Errorf("%s %s = %v, want %v", c.guard, c.series, v, c.want)
		}
	}
	if tot := got.series(t, "lim", "refused").Total; tot == nil || *tot != 1 {
		t.Errorf("lim refused total = %v, want 1", tot)
	}
	if tot := got.series(t, "pool", "opened").Total; tot == nil || *tot != 1 {
		t.Errorf("pool opened total = %v, want 1", tot)
	}
	a.Pass()
	b.Pass()
	loan.Release()
}

func TestServeHTTP(t *testing.T) {
	m := newManual()
	p := mustPage(t, live.WithClock(m.now))
	rule, _ := adaptive.NewFixed(4)
	lim, _ := adaptive.New(rule)
	if err := p.Limiter("api", lim); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/ward/", p)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp, sb.String()
	}

	resp, body := get("GET", "/debug/ward/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	if !strings.Contains(body, "<script>") || !strings.Contains(body, "<style>") {
		t.Fatal("page: want its script and style inline")
	}
	// Nothing loads from elsewhere: no script or style source, no import, no font, no remote URL
	// beyond the SVG namespace name.
	for _, bad := range []string{"src=", "<link", "@import", "url(", "@font-face", "https://", "//cdn"} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains %q: it must load nothing from elsewhere", bad)
		}
	}
	if n := strings.Count(body, "http://"); n != 1 || !strings.Contains(body, "'http://www.w3.org/2000/svg'") {
		t.Errorf("page has %d http:// references, want only the SVG namespace", n)
	}

	m.add(time.Second)
	for _, path := range []string{"/debug/ward/?format=json", "/debug/ward/data.json"} {
		m.add(time.Second)
		resp, body := get("GET", path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
		if got := decode(t, []byte(body)); *got.series(t, "api", "limit").Now != 4 {
			t.Fatalf("%s: %s", path, body)
		}
	}
	// Each read sampled (the clock moved a second before each).
	if got := len(decode(t, p.JSON()).T); got != 3 {
		t.Fatalf("samples after three reads a second apart: %d, want 3", got)
	}
	if resp, body := get("HEAD", "/debug/ward/?format=json"); resp.StatusCode != 200 || body != "" {
		t.Fatalf("HEAD: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get("POST", "/debug/ward/"); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestRun samples at once, then until its context ends, and returns the context's error.
func TestRun(t *testing.T) {
	p := mustPage(t, live.WithEvery(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context ending")
	}
	if got := len(decode(t, p.JSON()).T); got < 1 {
		t.Fatalf("Run took %d samples, want at least the first", got)
	}
}

// TestCounts: every guard that counts shows admitted and refused as rates with their totals and
// its settled outcomes, and one that times its calls the mean latency of the calls timed between
// two samples; a bucket built without rate.WithCounts shows no counts.
func TestCounts(t *testing.T) {
	var now int64
	clk := func() int64 { return now }
	rule, _ := adaptive.NewFixed(2)
	lim, _ := adaptive.New(rule, adaptive.WithClock(clk), adaptive.WithSampleEvery(1))
	counted, _ := rate.NewBucketLimiter(1, 2, rate.WithClock(clk), rate.WithCounts())
	quiet, _ := rate.NewBucketLimiter(1, 2, rate.WithClock(clk))
	sliding, _ := rate.NewSlidingLimiter(1, time.Hour, rate.WithClock(clk))
	m := newManual()
	p := mustPage(t, live.WithClock(m.now), live.WithEvery(time.Second))
	for _, err := range []error{p.Limiter("lim", lim), p.Bucket("counted", counted), p.Bucket("quiet", quiet),
		p.Guard("sliding", "rate limiter", sliding)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Guard("nil", "x", (*rate.SlidingLimiter)(nil)); err == nil {
		t.Error("Guard of a nil limiter: no error")
	}
	p.Sample()
	// one second: 2 calls of the limiter pass after 4 ms and 2 ms, one fails, one is refused
	a, _ := lim.Acquire()
	b, _ := lim.Acquire()
	if _, ok := lim.Acquire(); ok {
		t.Fatal("a third call admitted under a limit of 2")
	}
	now += int64(2 * time.Millisecond)
	b.Pass()
	now += int64(2 * time.Millisecond)
	a.Pass()
	c, _ := lim.Acquire()
	c.Fail()
	for range 3 {
		counted.Allow()
		quiet.Allow()
		sliding.Allow()
	}
	m.add(time.Second)
	p.Sample()
	got := decode(t, p.JSON())
	for _, c := range []struct {
		guard, series string
		now, total    float64
	}{
		{"lim", "admitted", 3, 3}, {"lim", "refused", 1, 1}, {"lim", "passed", 2, 2}, {"lim", "failed", 1, 1},
		{"lim", "ignored", 0, 0},
		{"counted", "admitted", 2, 2}, {"counted", "refused", 1, 1},
		{"sliding", "admitted", 1, 1}, {"sliding", "refused", 2, 2}, {"sliding", "passed", 0, 0},
	} {
		s := got.series(t, c.guard, c.series)
		if s.Now == nil || *s.Now != c.now || s.Total == nil || *s.Total != c.total {
			t.Errorf("%s %s: now %v, total %v; want %v/s and %v", c.guard, c.series, s.Now, s.Total, c.now, c.total)
		}
	}
	// the three timed calls: 4 ms, 2 ms and 0 ms
	if s := got.series(t, "lim", "latency mean"); s.Now == nil || *s.Now != 2 {
		t.Errorf("lim latency mean = %v, want 2 ms", s.Now)
	}
	for _, g := range got.Guards {
		if g.Name != "quiet" {
			continue
		}
		for _, s := range g.Series {
			if s.Name != "tokens" {
				t.Errorf("a bucket without WithCounts shows %q", s.Name)
			}
		}
	}
}
