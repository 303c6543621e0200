package wardhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/wardhttp"
)

// holding serves h until n requests are inside the handler (which must send on entered and then
// wait for release), and returns a function that releases them and waits for their answers. A
// request answered before any was released (refused) fails the test at once.
func holding(t *testing.T, h http.Handler, n int, entered <-chan struct{}, release chan struct{}) func() []int {
	t.Helper()
	codes := make([]int, n)
	early := make(chan int, n) // the codes of requests answered before the release
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			codes[i] = rec.Code
			select {
			case <-release:
			default:
				early <- rec.Code
			}
		}()
	}
	for range n {
		select {
		case <-entered:
		case c := <-early:
			close(release)
			wg.Wait()
			t.Fatalf("a request answered %d while fewer than %d were in the handler, want it held", c, n)
		}
	}
	return func() []int {
		close(release)
		wg.Wait()
		return codes
	}
}

func blockingHandler() (http.Handler, chan struct{}, chan struct{}) {
	entered, release := make(chan struct{}), make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	}), entered, release
}

func TestProtect(t *testing.T) {
	initial := adaptive.DefaultKnee().Initial
	inner, entered, release := blockingHandler()
	h := wardhttp.Protect(inner)
	finish := holding(t, h, initial, entered, release)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("request %d with %d in flight: %d (Retry-After %q), want 503 without Retry-After",
			initial+1, initial, rec.Code, rec.Header().Get("Retry-After"))
	}
	for i, c := range finish() {
		if c != http.StatusOK {
			t.Fatalf("held request %d answered %d, want 200", i, c)
		}
	}
	// A second Protect has a limit of its own.
	other := wardhttp.Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	rec = httptest.NewRecorder()
	other.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("a second Protect answered %d, want 200", rec.Code)
	}
}

func TestProtectWith(t *testing.T) {
	rule, _ := adaptive.NewFixed(2)
	lim, _ := adaptive.New(rule)
	inner, entered, release := blockingHandler()
	h := wardhttp.ProtectWith(lim, inner)
	finish := holding(t, h, 2, entered, release)
	if got := lim.InFlight(); got != 2 {
		t.Fatalf("the shared limiter's in flight = %d with 2 requests held, want 2", got)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("third request: %d, want 503", rec.Code)
	}
	finish()
	if got, refused := lim.InFlight(), lim.Snapshot().Refused; got != 0 || refused != 1 {
		t.Fatalf("after: in flight %d, refused %d; want 0 and 1", got, refused)
	}

	// A 5xx settles as a Fail, as Guard's default classification says: the limit's rule sees it.
	fail := wardhttp.ProtectWith(lim, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	rec = httptest.NewRecorder()
	fail.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusBadGateway || lim.InFlight() != 0 {
		t.Fatalf("failing handler: %d with %d in flight, want 502 and 0", rec.Code, lim.InFlight())
	}
}

func TestProtectNil(t *testing.T) {
	// A nil guard is a default limiter: Initial requests get in, the next is refused.
	initial := adaptive.DefaultKnee().Initial
	inner, entered, release := blockingHandler()
	h := wardhttp.ProtectWith(nil, inner)
	finish := holding(t, h, initial, entered, release)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("ProtectWith(nil, h), request %d: %d, want 503", initial+1, rec.Code)
	}
	finish()

	// A nil handler is http.DefaultServeMux: a path nobody registered is its 404.
	for name, h := range map[string]http.Handler{"Protect": wardhttp.Protect(nil), "ProtectWith": wardhttp.ProtectWith(nil, nil)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/wardhttp-test-nobody-registered-this", nil))
		if rec.Code != http.StatusNotFound {
			t.Fatalf("%s(nil): %d, want DefaultServeMux's 404", name, rec.Code)
		}
	}
}

// One expression in front of a handler: an adaptive limit at ward's recommended preset.
func ExampleProtect() {
	h := wardhttp.Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 200 hello
}

// The same with a limiter the server keeps, to share it or watch it.
func ExampleProtectWith() {
	lim := adaptive.Default()
	h := wardhttp.ProtectWith(lim, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Println("in flight while serving:", lim.InFlight())
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	fmt.Println("limit:", lim.Limit())
	// Output:
	// in flight while serving: 1
	// limit: 20
}
