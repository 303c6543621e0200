package faults

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward"
)

// Tick is the width of a Recorder's bucket.
const Tick = 100 * time.Millisecond

// Counts is what one client did in one Tick. Offered, OK, Refused and Failed are calls, counted
// at the instant the call was offered; Sent and Retries are attempts, counted at the instant they
// were sent.
type Counts struct {
	Offered int64 `json:"offered,omitempty"`
	OK      int64 `json:"ok,omitempty"`      // the call ended in a 200
	Refused int64 `json:"refused,omitempty"` // the call ended in the client's own refusal (ward.ErrRefused)
	Failed  int64 `json:"failed,omitempty"`  // any other end: a 5xx, a connection refused, a timeout
	Sent    int64 `json:"sent,omitempty"`    // attempts that left the client for the dependency
	Retries int64 `json:"retries,omitempty"` // of Sent, the attempts after a call's first
}

// Field names one of Counts' fields.
type Field int

// The fields of Counts.
const (
	Offered Field = iota
	OK
	Refused
	Failed
	Sent
	Retries
	nFields
)

// Recorder counts a client's calls and attempts in buckets of Tick from a start instant. Safe for
// concurrent use; an event before the start or past the last bucket is counted in Dropped.
type Recorder struct {
	buckets [][nFields]atomic.Int64
	dropped atomic.Int64
	hinted  atomic.Int64 // retries sent after an answer with Retry-After
	minWait atomic.Int64 // the shortest wait before such a retry, nanoseconds; MaxInt64 for none
}

// NewRecorder returns a Recorder covering span (rounded up to a whole Tick).
func NewRecorder(span time.Duration) *Recorder {
	n := max(int((span+Tick-1)/Tick), 0)
	r := &Recorder{buckets: make([][nFields]atomic.Int64, n)}
	r.minWait.Store(math.MaxInt64)
	return r
}

// Add counts one event of field f at d from the start.
func (r *Recorder) Add(d time.Duration, f Field) {
	if d < 0 || f < 0 || f >= nFields || int(d/Tick) >= len(r.buckets) {
		r.dropped.Add(1)
		return
	}
	r.buckets[d/Tick][f].Add(1)
}

// Hinted counts a retry sent wait after an answer that carried a Retry-After.
func (r *Recorder) Hinted(wait time.Duration) {
	r.hinted.Add(1)
	for {
		old := r.minWait.Load()
		if int64(wait) >= old || r.minWait.CompareAndSwap(old, int64(wait)) {
			return
		}
	}
}

// Series returns the counts so far, one element per Tick.
func (r *Recorder) Series(client string) Series {
	s := Series{Client: client, Buckets: make([]Counts, len(r.buckets)), Dropped: r.dropped.Load(), Hinted: r.hinted.Load()}
	if w := r.minWait.Load(); w != math.MaxInt64 {
		s.HintedMinWait = time.Duration(w)
	}
	for i := range r.buckets {
		b := &r.buckets[i]
		s.Buckets[i] = Counts{b[Offered].Load(), b[OK].Load(), b[Refused].Load(), b[Failed].Load(), b[Sent].Load(), b[Retries].Load()}
	}
	return s
}

// Series is one client's run: its counts per Tick and its Retry-After retries.
type Series struct {
	Client        string        `json:"client"`
	Buckets       []Counts      `json:"buckets"`
	Dropped       int64         `json:"dropped,omitempty"`         // events outside the buckets
	Hinted        int64         `json:"hinted_retries"`            // retries sent after an answer with Retry-After
	HintedMinWait time.Duration `json:"hinted_min_wait,omitempty"` // the shortest wait before one of them
}

// Outcome classifies a finished call: what the driver saw of client.Do.
func Outcome(resp *http.Response, err error) Field {
	switch {
	case err != nil && errors.Is(err, ward.ErrRefused):
		return Refused
	case err != nil, resp == nil, resp.StatusCode != http.StatusOK:
		return Failed
	}
	return OK
}

// Call is one call's state for a Meter, carried in its request's context.
type Call struct {
	attempts int
	hinted   bool          // the last attempt's answer carried a Retry-After
	answered time.Duration // when it came back
}

type callKey struct{}

// WithCall returns ctx carrying c, for the Meter under the client to find.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// Attempts returns the attempts of the call that left the client.
func (c *Call) Attempts() int { return c.attempts }

// Meter is the http.RoundTripper under a client's guard and retries: every attempt it sees left
// the client for the dependency. It counts them in Rec at Now (the time since the start), the
// retries among them, and the wait before a retry that followed a Retry-After. A call's
// attempts are sequential, so its Call needs no lock.
type Meter struct {
	Base http.RoundTripper
	Rec  *Recorder
	Now  func() time.Duration
}

// RoundTrip counts req and sends it through Base.
func (m *Meter) RoundTrip(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(callKey{}).(*Call)
	at := m.Now()
	m.Rec.Add(at, Sent)
	if c != nil {
		if c.attempts > 0 {
			m.Rec.Add(at, Retries)
			if c.hinted {
				m.Rec.Hinted(at - c.answered)
			}
		}
		c.attempts++
	}
	resp, err := m.Base.RoundTrip(req)
	if c != nil {
		c.hinted = err == nil && resp.Header.Get("Retry-After") != ""
		c.answered = m.Now()
	}
	return resp, err
}
