package wardhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/retry"
	"github.com/wardgo/ward/wardhttp"
)

func ExampleLimit() {
	rule, _ := adaptive.NewFixed(1) // one call at a time, to show a refusal
	lim, _ := adaptive.New(rule)
	protect, _ := wardhttp.Limit(lim)
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") }))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Body.String())

	lease, _ := lim.Acquire() // someone holds the only slot
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	lease.Pass()
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 200 hello
	//
	// 503 service unavailable
}

func ExampleFailures() {
	now := int64(time.Hour) // an injected clock, so the output is exact
	fw, _ := failurewindow.New(3, time.Minute, failurewindow.WithClock(func() int64 { return now }))
	guard, _ := wardhttp.Failures(fw, wardhttp.ByClientAddr, wardhttp.WithClassify(wardhttp.FailedLogin))
	login := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "swordfish" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	for _, pw := range []string{"a", "b", "c", "swordfish"} {
		now += int64(10 * time.Second)
		r := httptest.NewRequest("POST", "/login?password="+pw, nil)
		rec := httptest.NewRecorder()
		login.ServeHTTP(rec, r)
		if ra := rec.Header().Get("Retry-After"); ra != "" {
			fmt.Println(pw, rec.Code, "Retry-After", ra)
			continue
		}
		fmt.Println(pw, rec.Code)
	}
	// Output:
	// a 401
	// b 401
	// c 401
	// swordfish 429 Retry-After 30
}

func ExampleTransport() {
	var calls atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer backend.Close()

	var waited time.Duration // the example records the wait rather than sleeping it
	sleep := func(_ context.Context, d time.Duration) error { waited += d; return nil }
	tr, _ := wardhttp.NewTransport(nil, wardhttp.WithRetryOptions(retry.WithSleep(sleep)))
	client := &http.Client{Transport: tr}

	resp, err := client.Get(backend.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", calls.Load(), "calls, waited", waited)
	// Output:
	// 200 after 2 calls, waited 1s
}
