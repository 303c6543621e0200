package wardhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wardgo/ward/shed"
)

// TestShedRefuses: a shedder hot (CPU over its threshold) and full (more in flight than its
// capacity estimate) refuses before the handler runs: a 503 without Retry-After, allocating
// nothing.
func TestShedRefuses(t *testing.T) {
	const ms = int64(time.Millisecond)
	now, cpu := int64(0), 0
	s := must(shed.New(shed.WithClock(func() int64 { return now }), shed.WithCPU(func() int { return cpu }),
		shed.WithSampleEvery(1), shed.WithRefresh(0)))
	defer s.Stop()
	// One bucket of 100 calls of 50 ms each: a capacity of about 50 in flight.
	var ps []shed.Promise
	for range 100 {
		p, err := s.Allow()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	now = 50 * ms
	for i := range ps {
		ps[i].Pass()
	}
	// Then 200 in flight, 20 of them settling (their settling moves the in-flight average up to
	// 200) and 180 held; and the CPU over the threshold.
	now = 100 * ms
	ps = ps[:0]
	for range 200 {
		p, err := s.Allow()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i := range ps[:20] {
		ps[i].Fail()
	}
	defer func() {
		for i := range ps[20:] {
			ps[20+i].Ignore()
		}
	}()
	now, cpu = 150*ms, 900
	called := 0
	h := must(Shed(s))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called++; ok200(w, r) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || called != 0 || rec.Header().Get("Retry-After") != "" || rec.Body.String() != "service unavailable\n" {
		t.Fatalf("hot and full: %d %q Retry-After %q, handler called %d times; want 503, none, 0",
			rec.Code, rec.Body, rec.Header().Get("Retry-After"), called)
	}
	w := &reusable{h: http.Header{}}
	r := httptest.NewRequest("GET", "/", nil)
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 || w.code != 503 || called != 0 {
		t.Fatalf("refusal: %v allocations, status %d, handler called %d times; want 0, 503, 0", n, w.code, called)
	}
}
