package wardhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/rate"
)

// BenchmarkServe measures what a middleware adds to a request, on a reused writer: the admitted
// path beside a bare handler (impl=bare), and each refusal.
func BenchmarkServe(b *testing.B) {
	now := int64(time.Hour)
	clock := func() int64 { return now }
	held := fixed(1)
	lease, _ := held.Acquire()
	defer lease.Pass()
	empty := must(rate.NewBucketLimiter(0.5, 1, rate.WithClock(clock)))
	empty.Allow()
	fw := must(failurewindow.New(1, time.Minute, failurewindow.WithClock(clock)))
	fw.Record("192.0.2.1")
	cases := []struct {
		name string
		h    http.Handler
	}{
		{"path=admitted/impl=bare", ok200},
		{"path=admitted/impl=limit", must(Limit(fixed(1 << 20)))(ok200)},
		{"path=refused/impl=limit", must(Limit(held))(ok200)},
		{"path=refused/impl=rate", must(Rate(must(Shared(empty)), ByClientAddr))(ok200)},
		{"path=refused/impl=failures", must(Failures(fw, ByClientAddr))(ok200)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			w := &reusable{h: http.Header{}}
			r := httptest.NewRequest("GET", "/", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, r)
			}
		})
	}
}
