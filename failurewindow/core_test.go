package failurewindow

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// rolls returns a draw source handing out rs in turn, then 0; *used counts the draws taken.
func rolls(used *int, rs ...float64) func() float64 {
	return func() float64 {
		*used++
		if *used <= len(rs) {
			return rs[*used-1]
		}
		return 0
	}
}

func newCore(t *testing.T, limit int, window time.Duration) *Core {
	t.Helper()
	c, err := NewCore(limit, window, 0, func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewCoreErrors(t *testing.T) {
	roll := func() float64 { return 0 }
	for _, c := range []struct {
		limit  int
		window time.Duration
		roll   func() float64
		want   string
	}{
		{0, time.Minute, roll, "limit = 0"},
		{-1, time.Minute, roll, "limit = -1"},
		{MaxStoredFailures + 1, time.Minute, roll, "MaxStoredFailures"},
		{5, 0, roll, "window = 0s"},
		{5, -time.Second, roll, "window = -1s"},
		{5, time.Minute, nil, "roll = nil"},
	} {
		_, err := NewCore(c.limit, c.window, 0, c.roll)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewCore(%d, %v): %v, want an error saying %q", c.limit, c.window, err, c.want)
		}
	}
	if _, err := NewCore(MaxStoredFailures, time.Nanosecond, math.MinInt64, roll); err != nil {
		t.Errorf("the largest limit is rejected: %v", err)
	}
	if _, err := New(5, time.Minute, WithRand(nil)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "WithRand = nil") {
		t.Errorf("New with WithRand(nil): %v, want an error naming WithRand", err)
	}
}

// coreTrace runs steps on c; a record step's instant is the table's instant too.
func coreTrace(t *testing.T, c *Core, key string, steps []step) {
	t.Helper()
	traceCalls(t, c.Admit, c.Record, key, steps)
}

// TestCoreTrace: the Window's trace tables, on the Core: the window's boundary, a clock going
// back by less than a window and by more (a pull-back), and the ends of int64.
func TestCoreTrace(t *testing.T) {
	for _, c := range []struct {
		name   string
		limit  int
		window time.Duration
		key    string
		steps  []step
		stored int64
	}{
		{"boundary", 3, 10 * time.Second, "10.0.0.1", boundarySteps, 3},
		{"backwards", 2, 10 * time.Second, "k", backwardsSteps, 2},
		{"pull-back", 2, 10 * time.Second, "k", pullBackSteps, 2},
		{"ends of int64", 1, time.Minute, "k", extremeSteps, 1},
	} {
		core := newCore(t, c.limit, c.window)
		t.Run(c.name, func(t *testing.T) { coreTrace(t, core, c.key, c.steps) })
		if s := core.Snapshot(); s.Stored != c.stored || s.Keys != 1 {
			t.Errorf("%s: snapshot %+v, want %d stamps of one key", c.name, s, c.stored)
		}
	}
}

// TestCoreForeignInstant: RecordAt of one key at an instant of another origin, far ahead of the
// table's instants or far behind, judges the other keys at the table's instant: a sweep due at
// both runs at the table's, and an eviction spares an offender at its limit; the offender stays
// refused until a window of the table's clock has passed.
func TestCoreForeignInstant(t *testing.T) {
	unix := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, c := range []struct {
		name          string
		clock, stamp  int64
		lowerTheBound bool
	}{
		{"Unix instant, sweep", 5 * sec, unix, false},
		{"instant far behind, sweep", unix, 5 * sec, false},
		{"Unix instant, eviction", 5 * sec, unix, true},
		{"instant far behind, eviction", unix, 5 * sec, true},
	} {
		now, used := c.clock, 0
		core, err := NewCore(2, time.Minute, now, rolls(&used))
		if err != nil {
			t.Fatal(err)
		}
		core.Record("offender", now+30*sec)
		core.Record("offender", now+30*sec)
		if c.lowerTheBound {
			core.max = 2
		}
		now += int64(time.Minute) // a sweep is due at the table's instant, the offender still in
		core.RecordAt("someone else", c.stamp, now)
		if ok, wait := core.Admit("offender", now); ok || wait != 30*time.Second {
			t.Errorf("%s: after one RecordAt of another key at %d, Admit of the offender at %d = %v, %v; want refused for 30s",
				c.name, c.stamp, now, ok, wait)
		}
		if s := core.Snapshot(); c.lowerTheBound && (used == 0 || s.Uncounted != 1) {
			t.Errorf("%s: %d draws, %+v; want the eviction probing and counting nothing", c.name, used, s)
		}
		if !c.lowerTheBound && core.lastSweep != now {
			t.Errorf("%s: last sweep at %d, want one at the table's instant %d", c.name, core.lastSweep, now)
		}
		if ok, _ := core.Admit("offender", now+30*sec); !ok {
			t.Errorf("%s: the offender refused a window after its failures", c.name)
		}
	}
}

func TestCoreEvictionDraws(t *testing.T) {
	used := 0
	c, _ := NewCore(2, time.Hour, 0, rolls(&used, 0.1, math.NaN(), 0.9))
	c.max = 4
	c.Record("bad", 0) // key 0, at its limit
	c.Record("bad", 0)
	c.Record("x", 0) // key 1
	c.Record("y", 0) // key 2
	c.Record("new", sec)
	if used != 3 {
		t.Fatalf("%d draws, want 3: bad (0.1), bad (NaN, as 0), y (0.9)", used)
	}
	if _, ok := c.index["y"]; ok || c.Len() != 3 || c.entries[2].key() != "new" {
		t.Fatalf("keys %v, want y forgotten and new in its place", c.index)
	}
	if s := c.Snapshot(); s.Stored != 4 || s.Evictions != 1 || s.Uncounted != 0 {
		t.Fatalf("snapshot %+v", s)
	}
	// every probe at the limit: 8 draws, the failure not counted
	used = 0
	c, _ = NewCore(1, time.Hour, 0, rolls(&used, 2, -1, math.Inf(1)))
	c.max = 2
	c.Record("a", 0)
	c.Record("b", 0)
	c.Record("c", 0)
	if s := c.Snapshot(); used != evictionProbes || s.Uncounted != 1 || s.Stored != 2 || s.Evictions != 0 {
		t.Fatalf("%d draws, %+v; want %d draws and the failure uncounted", used, s, evictionProbes)
	}
	if ok, _ := c.Admit("a", sec); ok {
		t.Fatal("a key at its limit was forgotten")
	}
}

// TestCoreHour: an hour of a guessing client trying every 100 ms, every admitted try failing,
// limit 5 in 15 minutes: it is admitted exactly 5 times a window, 20 in the hour, and every
// refused try is told the exact wait until the next admitted one.
func TestCoreHour(t *testing.T) {
	c := newCore(t, 5, 15*time.Minute)
	step := int64(100 * time.Millisecond)
	admitted, next := 0, int64(-1) // next: when the last refusal said the key would pass
	for now := int64(0); now < int64(time.Hour); now += step {
		ok, wait := c.Admit("2001:db8::bad", now)
		if !ok {
			if next >= 0 && now+int64(wait) != next {
				t.Fatalf("at %v told to wait %v, but earlier told %v", time.Duration(now), wait, time.Duration(next))
			}
			next = now + int64(wait)
			continue
		}
		if next >= 0 && now != next {
			t.Fatalf("admitted at %v, told %v", time.Duration(now), time.Duration(next))
		}
		next = -1
		admitted++
		c.Record("2001:db8::bad", now)
	}
	if admitted != 20 {
		t.Fatalf("%d tries admitted in the hour, want 20", admitted)
	}
}

// TestCoreKeys: the empty key is a key; a huge key is stored as its digest (two that differ in
// their last byte are two keys, a prefix is another); nothing panics.
func TestCoreKeys(t *testing.T) {
	c := newCore(t, 1, time.Minute)
	huge := strings.Repeat("h", 1<<20)
	other := huge[:len(huge)-1] + "i"
	for _, k := range []string{"", huge} {
		c.Record(k, 0)
		if ok, _ := c.Admit(k, 1); ok {
			t.Fatalf("key of %d bytes not counted", len(k))
		}
	}
	for _, k := range []string{other, huge[:MaxKeyLen], huge[:MaxKeyLen+1]} {
		if ok, _ := c.Admit(k, 1); !ok {
			t.Fatalf("key of %d bytes taken for another", len(k))
		}
	}
	for _, e := range c.entries {
		if len(e.key()) > MaxKeyLen {
			t.Fatalf("a key of %d bytes stored whole", len(e.key()))
		}
	}
}

// TestCoreSweep: a sweep drops expired stamps and keys left with none, gives back the room of a
// table that emptied, and keeps every answer; Record sweeps on its own a window after the last.
func TestCoreSweep(t *testing.T) {
	c := newCore(t, 2, 10*time.Second)
	for i := 0; i < 1000; i++ {
		c.Record(fmt.Sprint("a", i), 0)
	}
	c.Record("stays", 5*sec)
	c.Record("stays", 5*sec)
	c.Sweep(10 * sec)
	if s := c.Snapshot(); s.Keys != 1 || s.Stored != 2 || cap(c.entries) > 4 || len(c.index) != 1 {
		t.Fatalf("after the sweep %+v, %d places kept; want only stays", s, cap(c.entries))
	}
	if ok, _ := c.Admit("stays", 10*sec); ok {
		t.Fatal("the key left after the sweep is admitted at its limit")
	}
	c.Record("b", 14*sec) // not a window since the last sweep: nothing swept
	if c.Len() != 2 {
		t.Fatalf("Len = %d, want 2", c.Len())
	}
	c.Record("c", 20*sec) // a window since: stays goes
	if _, ok := c.index["stays"]; ok || c.Len() != 2 {
		t.Fatalf("keys %v after the sweep at 20 s, want b and c", c.index)
	}
}

func TestCoreAllocs(t *testing.T) {
	c := newCore(t, 3, time.Minute)
	known := "2001:db8:85a3:8d3:1319:8a2e:370:7348"
	long := strings.Repeat("k", 300)
	for i := 0; i < 3; i++ {
		c.Record(known, 0)
		c.Record(long, 0)
	}
	for name, key := range map[string]string{"known": known, "unknown": "198.51.100.9", "long": long} {
		if a := testing.AllocsPerRun(1000, func() { c.Admit(key, sec) }); a != 0 {
			t.Errorf("Admit of a %s key allocates %v", name, a)
		}
	}
	for name, key := range map[string]string{"known": known, "long": long} {
		if a := testing.AllocsPerRun(1000, func() { c.Record(key, sec) }); a != 0 {
			t.Errorf("Record of a %s key at its limit allocates %v", name, a)
		}
	}
}
