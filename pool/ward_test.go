package pool

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/retry"
	"github.com/wardgo/ward/shed"
)

// The parts made from ward's own cores, in one Core.
func TestWardFromCores(t *testing.T) {
	br, err := breaker.NewCore(breaker.DefaultPolicy(), 0)
	if err != nil {
		t.Fatal(err)
	}
	bo, err := FromBackoff(retry.DefaultBackoff())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := shed.NewCore(shed.DefaultPolicy(), 0)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := FromShedder(sc, func() int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	bp, err := FromBreaker(br)
	if err != nil {
		t.Fatal(err)
	}
	c := newCore(t, limits(2, 2, 0, 0), Ward{Breaker: bp, Backoff: bo, Shedder: sh})
	// Failed makes: the backoff holds making back; the breaker learns and refuses.
	now := int64(0)
	refused := false
	for range 50 {
		tk := c.Take(now, 0)
		switch tk.Kind {
		case Make:
			c.Unmade(now, 0.5)
		case Later:
			now += int64(tk.Wait)
		case Shed:
			refused = true
			now += int64(10 * time.Millisecond)
		default:
			t.Fatalf("Take = %v", tk.Kind)
		}
	}
	if !refused || c.Refusal(now) <= 0 {
		t.Fatalf("breaker never refused after 50 failed makes (refusal %v)", c.Refusal(now))
	}
	if sc.InFlight() != 0 {
		t.Fatalf("shedder has %d in flight after every make failed", sc.InFlight())
	}
}

// Every From… refuses a nil argument with an ErrInvalid naming it.
func TestFromNil(t *testing.T) {
	sc, err := shed.NewCore(shed.DefaultPolicy(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		from func() (any, error)
	}{
		{"FromBreaker core", func() (any, error) { return FromBreaker(nil) }},
		{"FromBucket bucket", func() (any, error) { return FromBucket(nil) }},
		{"FromShedder core", func() (any, error) { return FromShedder(nil, func() int { return 0 }) }},
		{"FromShedder cpu", func() (any, error) { return FromShedder(sc, nil) }},
		{"FromBackoff", func() (any, error) { return FromBackoff(retry.Backoff{}) }},
	} {
		part, err := tc.from()
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: err = %v, want an ErrInvalid naming it", tc.name, err)
		}
		if part != nil {
			t.Errorf("%s: a part %v beside the error", tc.name, part)
		}
	}
}
