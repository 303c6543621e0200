package clients

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sony/gobreaker/v2"
	zbreaker "github.com/zeromicro/go-zero/core/breaker"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/loadtest/faults"
)

// fixed answers every attempt with status (or err), and counts the attempts.
type fixed struct {
	status int
	err    error
	calls  int
}

func (f *fixed) RoundTrip(*http.Request) (*http.Response, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &http.Response{StatusCode: f.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}, nil
}

func do(t *testing.T, rt http.RoundTripper) faults.Field {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://dependency/", nil)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return faults.Outcome(resp, err)
}

// TestClients: every client builds, with a distinct name and a note, and passes a 200 through.
func TestClients(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Clients() {
		if seen[c.Name] || c.Note == "" {
			t.Errorf("client %q: repeated or without a note", c.Name)
		}
		seen[c.Name] = true
		base := &fixed{status: 200}
		rt, err := c.Wrap(base)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got := do(t, rt); got != faults.OK || base.calls != 1 {
			t.Errorf("%s: a 200 gave %d after %d attempts", c.Name, got, base.calls)
		}
	}
}

func client(t *testing.T, name string) Client {
	t.Helper()
	for _, c := range Clients() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no client %q", name)
	return Client{}
}

// TestGobreakerRefusal: gobreaker opens after more than 5 consecutive failures (its default
// ReadyToTrip); its refusal then comes back as a ward refusal, is not retried and never reaches
// the dependency. A 500 is not retryable, so each call is one attempt.
func TestGobreakerRefusal(t *testing.T) {
	for _, name := range []string{"gobreaker 60 s", "gobreaker 5 s"} {
		base := &fixed{status: 500}
		rt, err := client(t, name).Wrap(base)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			if got := do(t, rt); got != faults.Failed {
				t.Fatalf("%s: call %d = %d, want Failed", name, i, got)
			}
		}
		for i := range 3 {
			if got := do(t, rt); got != faults.Refused {
				t.Errorf("%s: call %d after tripping = %d, want Refused", name, 6+i, got)
			}
		}
		if base.calls != 6 {
			t.Errorf("%s: %d attempts reached the dependency, want 6", name, base.calls)
		}
	}
}

// fakeZero is a go-zero Breaker whose Allow answers from err, recording what its promises hear.
type fakeZero struct {
	zbreaker.Breaker // the methods the harness does not call
	err              error
	accepts, rejects int
}

func (f *fakeZero) Allow() (zbreaker.Promise, error) {
	if f.err != nil {
		return nil, f.err
	}
	return promise{f}, nil
}

type promise struct{ f *fakeZero }

func (p promise) Accept()       { p.f.accepts++ }
func (p promise) Reject(string) { p.f.rejects++ }

// TestGoZeroSettles: each attempt through go-zero's breaker is accepted on anything below 500
// and rejected on a 5xx or a transport error; go-zero's refusal is a ward refusal.
func TestGoZeroSettles(t *testing.T) {
	for _, tc := range []struct {
		base             *fixed
		accepts, rejects int
	}{
		{&fixed{status: 200}, 1, 0},
		{&fixed{status: 404}, 1, 0},
		{&fixed{status: 500}, 0, 1},
		{&fixed{err: errors.New("connection refused")}, 0, 1},
	} {
		z := &fakeZero{}
		tr := &guardTripper{base: tc.base, g: goZero{z}}
		req, _ := http.NewRequest(http.MethodGet, "http://dependency/", nil)
		if resp, _ := tr.RoundTrip(req); resp != nil {
			_ = resp.Body.Close()
		}
		if z.accepts != tc.accepts || z.rejects != tc.rejects {
			t.Errorf("status %d err %v: %d accepted %d rejected, want %d and %d", tc.base.status, tc.base.err,
				z.accepts, z.rejects, tc.accepts, tc.rejects)
		}
	}
	z := &fakeZero{err: zbreaker.ErrServiceUnavailable}
	base := &fixed{status: 200}
	tr := &guardTripper{base: base, g: goZero{z}}
	req, _ := http.NewRequest(http.MethodGet, "http://dependency/", nil)
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, ward.ErrRefused) || !errors.Is(err, zbreaker.ErrServiceUnavailable) || base.calls != 0 {
		t.Errorf("a go-zero refusal: %v (ward refusal %v), %d attempts sent", err, errors.Is(err, ward.ErrRefused), base.calls)
	}
	if err.Error() != zbreaker.ErrServiceUnavailable.Error() {
		t.Errorf("the refusal reads %q", err)
	}
}

// TestRefusal: the wrapper matches ward.ErrRefused and the library's own error, nothing else.
func TestRefusal(t *testing.T) {
	err := error(refusal{gobreaker.ErrOpenState})
	if !errors.Is(err, ward.ErrRefused) || !errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		t.Errorf("refusal{ErrOpenState} matches wrongly")
	}
}
