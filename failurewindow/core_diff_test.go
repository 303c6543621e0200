package failurewindow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// pair drives a Window, from one goroutine on an injected clock, and a Core with the same calls
// at that clock's instants. The Core's eviction draws come from a seeded generator; the Window's
// are chosen so that it probes the keys the Core's draws chose (the Core numbers its keys, the
// Window draws a shard and a place in it): the one relation between them the Core's doc states.
type pair struct {
	t     testing.TB
	clock int64
	w     *Window
	c     *Core
	rng   *rand.Rand
	unit  int64 // the clock's ordinary step is -68 to 181 units

	probed  []string // keys the Core probed, in order, that the Window has not probed yet
	second  float64  // the place draw of the Window's pending probe
	pending bool
	bad     string // a draw the two did not share

	// what the run went through, so a run that exercised nothing fails
	refused, evictions, uncounted, sweeps, pulled int
}

func newPair(t testing.TB, limit int, window time.Duration, bound int64, seed uint64) *pair {
	p := &pair{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), unit: max(int64(window)/1024, 1)}
	var err error
	if p.c, err = NewCore(limit, window, 0, p.coreRoll); err != nil {
		t.Fatal(err)
	}
	if p.w, err = New(limit, window, WithClock(func() int64 { return p.clock }), WithRand(p.windowRoll)); err != nil {
		t.Fatal(err)
	}
	p.c.keying = p.w.keying // the same digests of long keys
	p.c.max, p.w.max = bound, bound
	return p
}

func (p *pair) coreRoll() float64 {
	r := p.rng.Float64()
	p.probed = append(p.probed, p.c.entries[pick(r, int64(len(p.c.entries)))].key())
	return r
}

// windowRoll answers the Window's two draws of a probe with the shard and the place of the key
// the Core probed.
func (p *pair) windowRoll() float64 {
	if p.pending {
		p.pending = false
		return p.second
	}
	if len(p.probed) == 0 {
		p.bad = "the Window probed more keys than the Core"
		return 0
	}
	key := p.probed[0]
	p.probed = p.probed[1:]
	for s := range p.w.shards {
		for j, e := range p.w.shards[s].entries {
			if e.key() == key {
				p.second, p.pending = (float64(j)+0.5)/float64(p.w.maxLen.Load()), true
				return (float64(s) + 0.5) / shards
			}
		}
	}
	p.bad = fmt.Sprintf("the Core probed %q, which the Window does not hold", key)
	return 0
}

// pairKeys: IPv6-like keys, the empty key, keys at MaxKeyLen and longer (stored as digests), two
// long keys differing in their last byte.
var pairKeys = func() []string {
	var k []string
	for i := 0; i < 40; i++ {
		k = append(k, fmt.Sprintf("2001:db8:85a3::%x", i))
	}
	long := strings.Repeat("L", 4*MaxKeyLen)
	return append(k, "", strings.Repeat("M", MaxKeyLen), strings.Repeat("M", MaxKeyLen+1), long+"a", long+"b")
}()

var errFail = errors.New("wrong password")

// step decodes one call from four bytes, makes it on both and compares the answers and the
// tables.
func (p *pair) step(i int, op, k, dt, origin byte) {
	t := p.t
	win := p.w.window
	switch dt { // the clock: mostly forward, sometimes back, sometimes a jump of any size
	case 0:
		p.clock -= 1000 * win
	case 1:
		p.clock = math.MinInt64 + int64(origin)
	case 2:
		p.clock = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano() + int64(origin)*win/8
	case 3:
		p.clock = int64(origin) * win / 16
	case 254:
		p.clock = math.MaxInt64 - int64(origin)
	case 255:
		p.clock += 1000 * win
	default:
		p.clock += (int64(dt) - 72) * p.unit
	}
	key := pairKeys[int(k)%len(pairKeys)]
	switch {
	case k == 0xff:
		key = fmt.Sprintf("fresh %d", i) // a flood of new keys
	case k&0x80 != 0:
		key = pairKeys[int(k)%4] // a few hot keys, which reach their limit
	}
	at := p.clock // the instant of an …At call: this clock, or another origin
	switch origin % 8 {
	case 4:
		at -= int64(origin>>3) * win / 16 // a little behind: instants read out of order
	case 5:
		at = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano() + int64(origin)*int64(time.Second)
	case 6:
		at -= 1_000_000 * win
	case 7:
		at = math.MaxInt64
		if origin&8 != 0 {
			at = math.MinInt64
		}
	}
	now := p.clock
	var what func() string // the call, described only when it fails
	compare := func(call func() string, gotOK bool, gotWait time.Duration, wantOK bool, wantWait time.Duration) {
		if gotOK != wantOK || gotWait != wantWait {
			t.Fatalf("step %d: %s = %v, %v; the core says %v, %v", i, call(), gotOK, gotWait, wantOK, wantWait)
		}
		if !wantOK {
			p.refused++
		}
	}
	switch op % 10 {
	case 0, 1:
		what = func() string { return fmt.Sprintf("Admit(%.20q) at %d", key, now) }
		ok, wait := p.w.Admit(key)
		wantOK, wantWait := p.c.Admit(key, p.clock)
		compare(what, ok, wait, wantOK, wantWait)
	case 2:
		what = func() string { return fmt.Sprintf("AdmitAt(%.20q, %d) at %d", key, at, now) }
		ok, wait := p.w.AdmitAt(key, at)
		wantOK, wantWait := p.c.Admit(key, at)
		compare(what, ok, wait, wantOK, wantWait)
	case 3, 4:
		what = func() string { return fmt.Sprintf("Record(%.20q) at %d", key, now) }
		p.c.Record(key, p.clock)
		p.w.Record(key)
	case 5:
		what = func() string { return fmt.Sprintf("RecordAt(%.20q, %d) at %d", key, at, now) }
		p.c.RecordAt(key, at, p.clock)
		p.w.RecordAt(key, at)
	case 6, 7, 8: // Do: failing, succeeding, panicking; fn takes a little time on the clock
		what = func() string { return fmt.Sprintf("Do(%.20q) at %d (op %d)", key, now, op%10) }
		start, took := p.clock, int64(origin)*win/256
		wantOK, wantWait := p.c.Admit(key, start)
		if wantOK && op%10 != 7 {
			p.c.Record(key, start+took)
		}
		ran := false
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errFail
				}
			}()
			return p.w.Do(context.Background(), key, func(context.Context) error {
				ran = true
				p.clock += took
				switch op % 10 {
				case 6:
					return errFail
				case 8:
					panic("fn panics")
				}
				return nil
			})
		}()
		wait, _ := contract.RetryAfter(err)
		if !ran && !errors.Is(err, ErrTooManyFailures) {
			t.Fatalf("step %d: %s did not run fn and returned %v", i, what(), err)
		}
		compare(what, ran, wait, wantOK, wantWait)
	case 9:
		what = func() string { return fmt.Sprintf("Sweep() at %d", now) }
		p.c.Sweep(p.clock)
		p.w.Sweep()
		for _, key := range pairKeys { // and every key's answer
			ok, wait := p.w.Admit(key)
			wantOK, wantWait := p.c.Admit(key, p.clock)
			compare(func() string { return fmt.Sprintf("after the sweep, Admit(%.20q)", key) }, ok, wait, wantOK, wantWait)
		}
	}
	if p.bad != "" || len(p.probed) != 0 || p.pending {
		t.Fatalf("step %d: %s: the eviction draws differ: %s (%d of the Core's probes left)", i, what(), p.bad, len(p.probed))
	}
	got := Snapshot{Stored: p.w.stored.Load(), Evictions: p.w.evictions.Load(), Uncounted: p.w.uncounted.Load()}
	for s := range p.w.shards { // Len without the locks: one goroutine
		got.Keys += len(p.w.shards[s].entries)
	}
	want := p.c.Snapshot()
	if got != want || p.w.lastSweep.Load() != p.c.lastSweep || p.w.swept.Load() != p.c.swept {
		t.Fatalf("step %d: %s: the Window holds %+v (last sweep %d), the core %+v (last sweep %d)",
			i, what(), got, p.w.lastSweep.Load(), want, p.c.lastSweep)
	}
	if got.Stored > p.w.max {
		t.Fatalf("step %d: %s: %d stamps stored, over the bound %d", i, what(), got.Stored, p.w.max)
	}
}

// run makes the calls data encodes, four bytes each.
func (p *pair) run(data []byte) {
	for i := 0; i+3 < len(data); i += 4 {
		before, last := p.c.Snapshot(), p.c.lastSweep
		p.step(i/4, data[i], data[i+1], data[i+2], data[i+3])
		after := p.c.Snapshot()
		p.evictions += int(after.Evictions - before.Evictions)
		p.uncounted += int(after.Uncounted - before.Uncounted)
		if data[i]%10 != 9 && p.c.lastSweep != last { // a sweep Record ran on its own
			p.sweeps++
		}
	}
}

// TestWindowMatchesCore: over long random sequences of Admit, AdmitAt, Record, RecordAt, Do and
// Sweep on many keys, with the table's bound lowered so that evictions and uncounted failures are
// frequent, a clock that steps forward and back and jumps to either end of int64, and instants of
// other origins (Unix time, far behind, the ends of int64), the Window gives exactly the Core's
// answers and holds exactly its table after every call.
func TestWindowMatchesCore(t *testing.T) {
	steps := 10000
	if testing.Short() {
		steps = 2000
	}
	var total pair
	for trial := 0; trial < 48; trial++ {
		limit := []int{1, 2, 3, 5, 8, 64}[trial%6]
		window := []time.Duration{time.Second, 15 * time.Minute, 3}[trial%3]
		bound := []int64{4, 24, 96, 4096}[trial/6%4]
		p := newPair(t, limit, window, bound, uint64(trial))
		p.unit = max(int64(window)>>[]int{6, 10, 14}[trial%5%3], 1)
		data := make([]byte, 4*steps)
		for i := range data {
			data[i] = byte(p.rng.Uint32())
		}
		for i := 2; i < len(data); i += 4 { // clock jumps now and then, not one call in 30
			if data[i] < 4 || data[i] > 253 {
				data[i] = 80
			}
			if p.rng.IntN(500) == 0 {
				data[i] = []byte{0, 1, 2, 3, 254, 255}[p.rng.IntN(6)]
			}
		}
		if trial%8 == 7 { // a flood of fresh keys on a table of the full bound: sweeps fall due on size
			p.c.max, p.w.max = MaxStoredFailures, MaxStoredFailures
			for i := 1; i < len(data); i += 8 {
				data[i] = 0xff
			}
		}
		p.run(data)
		total.refused += p.refused
		total.evictions += p.evictions
		total.uncounted += p.uncounted
		total.sweeps += p.sweeps
	}
	t.Logf("refusals %d, evictions %d, uncounted %d, sweeps %d", total.refused, total.evictions, total.uncounted, total.sweeps)
	if total.refused == 0 || total.evictions == 0 || total.uncounted == 0 || total.sweeps == 0 {
		t.Fatalf("the runs did not go through every path: %+v", total)
	}
}

// FuzzWindowMatchesCore: the same equality on sequences the fuzzer writes; the first three bytes
// choose the limit, the window and the bound.
func FuzzWindowMatchesCore(f *testing.F) {
	f.Add([]byte{2, 1, 1, 3, 0x80, 80, 0, 3, 0x80, 80, 0, 0, 0x80, 90, 0, 5, 1, 80, 0x45, 9, 0, 80, 0})
	f.Add([]byte{0, 0, 0, 3, 0xff, 80, 0, 3, 0xff, 80, 0, 3, 0xff, 255, 5, 5, 0x81, 0, 0x2d, 6, 0x80, 80, 40})
	f.Add([]byte{4, 2, 3, 5, 0x80, 254, 0x0f, 2, 0x80, 1, 0x07, 8, 0x81, 80, 0x15, 9, 0, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		limit := 1 + int(data[0])%8
		window := []time.Duration{1, time.Second, time.Hour, 1 << 62}[data[1]%4]
		bound := []int64{1, 3, 8, 40}[data[2]%4]
		p := newPair(t, limit, window, bound, uint64(len(data)))
		p.run(data[3:])
	})
}
