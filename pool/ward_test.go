package pool

import (
	"testing"
	"time"

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
	if _, err := FromShedder(nil, nil); err == nil {
		t.Fatal("FromShedder(nil, nil) accepted")
	}
	if FromBreaker(nil) != nil || FromBucket(nil) != nil {
		t.Fatal("a nil core gave a part")
	}
	c := newCore(t, limits(2, 2, 0, 0), Ward{Breaker: FromBreaker(br), Backoff: bo, Shedder: sh})
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
