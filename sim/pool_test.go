package sim

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/wardgo/ward/pool"
)

// TestPool: the scenario is deterministic, stays within the limits, queues callers only in the
// burst, and shrinks once traffic is quiet and Keep has passed; the server setting opens far
// fewer resources than the churning one, and the demo prints both, labelled.
func TestPool(t *testing.T) {
	opened := map[string]int64{}
	for name, l := range map[string]pool.Limits{"server": PoolLimits(), "churn": PoolChurnLimits()} {
		rows := Pool(1, l)
		if again := Pool(1, l); !reflect.DeepEqual(rows, again) {
			t.Fatalf("%s: the same seed gave different rows", name)
		}
		if len(rows) != len(PoolRates) {
			t.Fatalf("%s: %d rows, want %d", name, len(rows), len(PoolRates))
		}
		waited := false
		for _, r := range rows {
			t.Logf("%s %+v", name, r)
			if r.Lent+r.Idle > l.Size || r.Idle > l.Idle {
				t.Errorf("%s second %d: lent %d idle %d, over the limits %+v", name, r.Second, r.Lent, r.Idle, l)
			}
			if r.Waiting > 0 && r.Rate < 200 {
				t.Errorf("%s second %d: %d waiting at %v calls/s", name, r.Second, r.Waiting, r.Rate)
			}
			waited = waited || r.Waiting > 0 || r.MaxWait > 0
		}
		if !waited {
			t.Errorf("%s: nobody waited during the burst", name)
		}
		if quiet, last := rows[len(rows)-6], rows[len(rows)-1]; last.Lent+last.Idle >= 4 || quiet.Lent+quiet.Idle < 4 {
			t.Errorf("%s: quiet seconds %+v … %+v: want the pool shrunk by Keep", name, quiet, last)
		}
		opened[name] = rows[len(rows)-1].Opened
	}
	// The server setting opens about one resource per slot per quiet spell; the churning one
	// reopens throughout.
	if opened["server"]*4 > opened["churn"] {
		t.Errorf("opens: server setting %d, churning %d: want the churning one at least 4x", opened["server"], opened["churn"])
	}
	var b bytes.Buffer
	WritePool(&b, 1)
	for _, want := range []string{"server setting", "churning", "waiting", "a second"} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("WritePool printed no %q:\n%s", want, b.String())
		}
	}
	t.Log("\n" + b.String())
}
