package wardhttp

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/retry"
)

// TestRetryBudgetThousandths: both arguments are kept in thousandths; a value that keeps none (a
// budget that would never retry, a ratio that would never refill) is an error naming the
// argument, never a value moved into range.
func TestRetryBudgetThousandths(t *testing.T) {
	for _, c := range []struct {
		maxTokens, ratio float64
		field            string
	}{
		{0.0004, 0.1, "maxTokens"}, // rounds to no thousandth: Allow would never say yes
		{0, 0.1, "maxTokens"},
		{-1, 0.1, "maxTokens"},
		{1000.1, 0.1, "maxTokens"},
		{math.NaN(), 0.1, "maxTokens"},
		{math.Inf(1), 0.1, "maxTokens"},
		{10, 0.0004, "ratio"}, // truncates to no thousandth: would never refill
		{10, 0.0009, "ratio"},
		{10, 0, "ratio"},
		{10, 1.5, "ratio"},
		{10, math.NaN(), "ratio"},
	} {
		b, err := NewRetryBudget(c.maxTokens, c.ratio)
		if b != nil || !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), c.field+" = ") {
			t.Errorf("NewRetryBudget(%v, %v) = %v, %v; want ErrInvalid naming %s", c.maxTokens, c.ratio, b, err, c.field)
		}
	}
	// The smallest of each: a budget of one thousandth allows while full, and a ratio of one
	// thousandth refills by exactly that.
	b, err := NewRetryBudget(0.001, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Allow() {
		t.Fatal("a full budget of 0.001 refuses")
	}
	b.Fail()
	b.Pass()
	if b.Tokens() != 0.001 || !b.Allow() {
		t.Fatalf("after a failure and a success: %v tokens, Allow %v; want 0.001, true", b.Tokens(), b.Allow())
	}
	if b, err := NewRetryBudget(0.0015, 0.0019); err != nil || b.max != 2 || b.ratio != 1 {
		t.Fatalf("NewRetryBudget(0.0015, 0.0019): %v; want 2 and 1 thousandths (rounded, truncated)", err)
	}
}

// TestWithRetryOptionsChecked: a nil option, or one retry.Do rejects, fails NewTransport naming
// WithRetryOptions, rather than every request.
func TestWithRetryOptionsChecked(t *testing.T) {
	for name, opts := range map[string][]retry.Option{
		"WithRetryOptions option 0 = nil": {nil},
		"WithRetryOptions option 1 = nil": {retry.WithRand(func() float64 { return 0 }), nil},
		"WithRetryOptions = ":             {retry.WithSleep(nil)},
	} {
		tr, err := NewTransport(&backend{statuses: []int{200}}, WithRetryOptions(opts...))
		if tr != nil || !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("WithRetryOptions(%s): NewTransport = %v, %v; want ErrInvalid naming it", name, tr, err)
		}
	}
}

// TestWithRetryOptionsRetryIf: a retry.WithRetryIf passed through WithRetryOptions narrows the
// Transport's own rule instead of being dropped: a 503 the caller's rule refuses is not retried,
// and one it accepts still is.
func TestWithRetryOptionsRetryIf(t *testing.T) {
	for _, c := range []struct {
		name  string
		retry bool
		calls int
	}{{"caller refuses", false, 1}, {"caller accepts", true, 2}} {
		b := &backend{statuses: []int{503, 200}}
		var s sleeps
		asked := 0
		tr := newTestTransport(t, b, &s, WithRetryOptions(retry.WithSleep(s.sleep),
			retry.WithRetryIf(func(error) bool { asked++; return c.retry })))
		resp, err := get(t, tr, "GET", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if b.calls != c.calls || asked != 1 {
			t.Errorf("%s: %d calls, the caller's rule asked %d times; want %d calls, asked once", c.name, b.calls, asked, c.calls)
		}
	}
}
