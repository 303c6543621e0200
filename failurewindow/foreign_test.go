package failurewindow

import (
	"fmt"
	"testing"
	"time"
)

// TestForeignInstantFreesNoOffender: an instant of another origin handed to one key, far ahead
// of the Window's clock or far behind it, neither frees another key's offender through a sweep
// nor through an eviction: the offender at its limit is refused on its next call.
func TestForeignInstantFreesNoOffender(t *testing.T) {
	unix := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, c := range []struct {
		name          string
		clock, stamp  int64 // the Window's clock, and the instant handed to another key
		lowerTheBound bool  // a full table: the foreign Record evicts instead of sweeping
	}{
		{"Unix instant, sweep", 5 * sec, unix, false},
		{"instant far behind, sweep", unix, 5 * sec, false},
		{"Unix instant, eviction", 5 * sec, unix, true},
		{"instant far behind, eviction", unix, 5 * sec, true},
	} {
		now := c.clock
		w, err := New(2, time.Minute, WithClock(func() int64 { return now }))
		if err != nil {
			t.Fatal(err)
		}
		w.Record("offender")
		w.Record("offender")
		if c.lowerTheBound {
			w.max = 2 // the offender's two stamps fill the table
		} else {
			for i := 0; i < 3000; i++ { // enough stamps that a sweep is due on size alone
				w.Record(fmt.Sprint("k", i))
			}
		}
		if ok, _ := w.Admit("offender"); ok {
			t.Fatalf("%s: the offender admitted before anything foreign", c.name)
		}
		w.RecordAt("someone else", c.stamp)
		if ok, _ := w.Admit("offender"); ok {
			t.Errorf("%s: one RecordAt of another key at %d freed the offender on a clock at %d", c.name, c.stamp, c.clock)
		}
		now += int64(time.Minute) // a window later on its own clock, the offender passes again
		if ok, _ := w.Admit("offender"); !ok {
			t.Errorf("%s: the offender refused a window later", c.name)
		}
	}
}
