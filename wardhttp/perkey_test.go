package wardhttp

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wardgo/ward/rate"
)

// TestPerKeyRetryAfter: a key refused by its own limiter is told when it would pass, at the
// instants of the limiter's clock; a key behind a Gate, whose wait is unknown, is refused
// without Retry-After.
func TestPerKeyRetryAfter(t *testing.T) {
	now := int64(time.Hour)
	clock := func() int64 { return now }
	part := must(rate.NewPartitioned(100, func(string) *rate.BucketLimiter {
		return must(rate.NewBucketLimiter(0.5, 1, rate.WithClock(clock)))
	}))
	h := must(Rate(must(PerKey(part, clock)), ByHeader("X-Api-Key")))(ok200)
	steps := []struct {
		at   time.Duration // after the first request
		key  string
		code int
		ra   string // Retry-After
	}{
		{0, "a", 200, ""},
		{0, "a", 429, "2"}, // one token every 2 s
		{0, "b", 200, ""},  // its own allowance
		{time.Second, "a", 429, "1"},
		{1500 * time.Millisecond, "a", 429, "1"}, // 0.5 s, rounded up
		{2 * time.Second, "a", 200, ""},
	}
	start := now
	for i, s := range steps {
		now = start + int64(s.at)
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Api-Key", s.key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != s.code || rec.Header().Get("Retry-After") != s.ra {
			t.Fatalf("step %d: key %q at +%v = %d Retry-After %q, want %d %q", i, s.key, s.at, rec.Code, rec.Header().Get("Retry-After"), s.code, s.ra)
		}
	}
	// A Gate is never released by Rate (a quota counts calls): the key's second request is refused,
	// and the gate cannot say when room frees.
	gates := must(rate.NewPartitioned(100, func(string) *rate.Gate { return must(rate.NewGate(1)) }))
	g := must(Rate(must(PerKey(gates, clock)), ByClientAddr))(ok200)
	for i, want := range []int{200, 429} {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != want || rec.Header().Get("Retry-After") != "" {
			t.Fatalf("gate step %d: %d Retry-After %q, want %d and none", i, rec.Code, rec.Header().Get("Retry-After"), want)
		}
	}
}
