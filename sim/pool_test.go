package sim

import (
	"bytes"
	"reflect"
	"testing"
)

// TestPool: the scenario is deterministic, stays within the limits, queues callers only in the
// burst, and shrinks below its idle cap once traffic is quiet and Keep has passed.
func TestPool(t *testing.T) {
	rows := Pool(1)
	if again := Pool(1); !reflect.DeepEqual(rows, again) {
		t.Fatal("the same seed gave different rows")
	}
	if len(rows) != len(PoolRates) {
		t.Fatalf("%d rows, want %d", len(rows), len(PoolRates))
	}
	l := PoolLimits()
	waited := false
	for _, r := range rows {
		t.Logf("%+v", r)
		if r.Lent+r.Idle > l.Size || r.Idle > l.Idle {
			t.Errorf("second %d: lent %d idle %d, over the limits %+v", r.Second, r.Lent, r.Idle, l)
		}
		if r.Waiting > 0 && r.Rate < 200 {
			t.Errorf("second %d: %d waiting at %v calls/s", r.Second, r.Waiting, r.Rate)
		}
		waited = waited || r.Waiting > 0 || r.MaxWait > 0
	}
	if !waited {
		t.Error("nobody waited during the burst")
	}
	if last := rows[len(rows)-1]; last.Lent+last.Idle >= l.Idle || rows[len(rows)-7].Idle != l.Idle {
		t.Errorf("quiet seconds %+v … %+v: want the pool shrunk by Keep from the idle cap", rows[len(rows)-7], last)
	}
	var b bytes.Buffer
	WritePool(&b, 1)
	if !bytes.Contains(b.Bytes(), []byte("waiting")) {
		t.Errorf("WritePool printed %q", b.String())
	}
}
