package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/breaker"
)

// TestRecorder: events land in their Tick; events outside are dropped, not misplaced.
func TestRecorder(t *testing.T) {
	r := NewRecorder(250 * time.Millisecond) // three buckets
	r.Add(0, Offered)
	r.Add(Tick-1, Offered)
	r.Add(Tick, Sent)
	r.Add(3*Tick-1, Refused)
	r.Add(3*Tick, Refused) // past the end
	r.Add(-1, OK)          // before the start
	r.Add(0, Field(-1))
	r.Add(0, nFields)
	got := r.Series("c")
	want := []Counts{{Offered: 2}, {Sent: 1}, {Refused: 1}}
	if fmt.Sprint(got.Buckets) != fmt.Sprint(want) || got.Dropped != 4 || got.Client != "c" {
		t.Errorf("Series = %+v, want buckets %v and 4 dropped", got, want)
	}
	if got.Hinted != 0 || got.HintedMinWait != 0 {
		t.Errorf("no Retry-After retries, got %d (min %v)", got.Hinted, got.HintedMinWait)
	}
	r.Hinted(1500 * time.Millisecond)
	r.Hinted(time.Second)
	r.Hinted(2 * time.Second)
	if got := r.Series("c"); got.Hinted != 3 || got.HintedMinWait != time.Second {
		t.Errorf("Hinted = %d min %v, want 3 min 1s", got.Hinted, got.HintedMinWait)
	}
	if n := len(NewRecorder(-time.Second).Series("").Buckets); n != 0 {
		t.Errorf("a negative span has %d buckets", n)
	}
}

// TestRecorderConcurrent: every event counted once from many goroutines.
func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder(time.Second)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				r.Add(time.Duration(i%10)*Tick, Field(g%int(nFields)))
				r.Hinted(time.Duration(g*1000 + i))
			}
		}()
	}
	wg.Wait()
	s := r.Series("")
	c := total(s)
	if n := c.Offered + c.OK + c.Refused + c.Failed + c.Sent + c.Retries; n != 8000 || s.Hinted != 8000 || s.HintedMinWait != 0 {
		t.Errorf("counted %d events, %d hinted (min %v), want 8000, 8000, 0", n, s.Hinted, s.HintedMinWait)
	}
}

// TestOutcome: what counts as a 200, a refusal and a failure.
func TestOutcome(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Get", URL: "http://x/", Err: err} }
	for _, tc := range []struct {
		resp *http.Response
		err  error
		want Field
	}{
		{&http.Response{StatusCode: 200}, nil, OK},
		{&http.Response{StatusCode: 503}, nil, Failed},
		{&http.Response{StatusCode: 204}, nil, Failed},
		{nil, nil, Failed},
		{nil, wrap(breaker.ErrUnavailable), Refused},
		{nil, wrap(fmt.Errorf("guard: %w", ward.ErrRefused)), Refused},
		{nil, wrap(errors.New("connection refused")), Failed},
		{nil, wrap(context.DeadlineExceeded), Failed},
	} {
		if got := Outcome(tc.resp, tc.err); got != tc.want {
			t.Errorf("Outcome(%v, %v) = %d, want %d", tc.resp, tc.err, got, tc.want)
		}
	}
}

// script is a base RoundTripper answering from a list, one answer per attempt.
type script struct {
	answers []*http.Response
	now     *time.Duration
	took    time.Duration // each attempt moves now by took
}

func (s *script) RoundTrip(*http.Request) (*http.Response, error) {
	*s.now += s.took
	if len(s.answers) == 0 {
		return nil, errors.New("connection refused")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func answer(status int, retryAfter string) *http.Response {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: status, Header: h}
}

// TestMeter: a call of three attempts, the second after a Retry-After answer, counted at the
// injected instants; an attempt without a Call is counted as sent and nothing else.
func TestMeter(t *testing.T) {
	var now time.Duration
	rec := NewRecorder(10 * time.Second)
	base := &script{answers: []*http.Response{answer(503, "1"), answer(503, ""), answer(200, "")}, now: &now, took: 5 * time.Millisecond}
	m := &Meter{Base: base, Rec: rec, Now: func() time.Duration { return now }}
	c := &Call{}
	req, _ := http.NewRequestWithContext(WithCall(context.Background(), c), http.MethodGet, "http://x/", nil)
	for i, at := range []time.Duration{0, 1005 * time.Millisecond, 1210 * time.Millisecond} {
		now = at
		if _, err := m.RoundTrip(req); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	now = 2 * time.Second
	bare, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	if _, err := m.RoundTrip(bare); err == nil {
		t.Fatal("the fourth attempt should fail: the script is done")
	}
	if c.Attempts() != 3 {
		t.Errorf("Attempts = %d, want 3", c.Attempts())
	}
	s := rec.Series("")
	want := map[int]Counts{0: {Sent: 1}, 10: {Sent: 1, Retries: 1}, 12: {Sent: 1, Retries: 1}, 20: {Sent: 1}}
	for i, b := range s.Buckets {
		if b != want[i] {
			t.Errorf("bucket %d = %+v, want %+v", i, b, want[i])
		}
	}
	// the retry after Retry-After: 1 left 1005 ms after the attempt started, 1000 ms after it answered
	if s.Hinted != 1 || s.HintedMinWait != time.Second {
		t.Errorf("hinted %d, min wait %v; want 1 and 1s", s.Hinted, s.HintedMinWait)
	}
}
