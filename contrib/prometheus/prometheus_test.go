package wardprom

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

func TestCollector(t *testing.T) {
	rule, _ := adaptive.NewFixed(2)
	lim, _ := adaptive.New(rule)
	now := int64(0)
	brk, _ := breaker.New(breaker.WithClock(func() int64 { return now }))
	cpu := 950
	shd, _ := shed.New(shed.WithClock(func() int64 { return now }), shed.WithCPU(func() int { return cpu }))

	c := New("svc")
	for _, err := range []error{c.Limiter("api", lim), c.Breaker("db", brk), c.Shedder("api", shd)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	a, _ := lim.Acquire()
	b, _ := lim.Acquire()
	if _, ok := lim.Acquire(); ok {
		t.Fatal("a third call passed a limit of 2")
	}
	p, _ := shd.Allow()
	want := `
# HELP svc_ward_in_flight Calls in flight.
# TYPE svc_ward_in_flight gauge
svc_ward_in_flight{kind="adaptive",name="api"} 2
svc_ward_in_flight{kind="shed",name="api"} 1
# HELP svc_ward_limit The adaptive limit: calls allowed in flight.
# TYPE svc_ward_limit gauge
svc_ward_limit{name="api"} 2
# HELP svc_ward_refused_total Calls refused.
# TYPE svc_ward_refused_total counter
svc_ward_refused_total{kind="adaptive",name="api",reason="limit"} 1
svc_ward_refused_total{kind="breaker",name="db",reason="breaker"} 0
svc_ward_refused_total{kind="shed",name="api",reason="overload"} 0
# HELP svc_ward_shed_cpu_ratio The shedder's CPU reading, 0 to 1 of what the process may use.
# TYPE svc_ward_shed_cpu_ratio gauge
svc_ward_shed_cpu_ratio{name="api"} 0.95
# HELP svc_ward_shed_hot 1 while the shedder is hot.
# TYPE svc_ward_shed_hot gauge
svc_ward_shed_hot{name="api"} 1
# HELP svc_ward_breaker_ratio A breaker's standing refusal fraction.
# TYPE svc_ward_breaker_ratio gauge
svc_ward_breaker_ratio{name="db"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"svc_ward_in_flight", "svc_ward_limit", "svc_ward_refused_total", "svc_ward_shed_cpu_ratio", "svc_ward_shed_hot", "svc_ward_breaker_ratio"); err != nil {
		t.Fatal(err)
	}
	a.Pass()
	b.Pass()
	p.Pass()
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 28 {
		t.Fatalf("%d metrics (%v), want 28", n, err)
	}
}

// TestTransportTakenBudget: a Transport whose retry budget's name is taken is not added at all:
// no breaker of its hosts is exported.
func TestTransportTakenBudget(t *testing.T) {
	tr, err := wardhttp.NewTransport(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tr.Breaker("h.test").Allow()
	p.Pass()
	c := New("svc")
	if err := c.RetryBudget("out", tr.Budget()); err != nil {
		t.Fatal(err)
	}
	if err := c.Transport("out", tr); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Transport under a taken budget name: %v, want ErrDuplicate", err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "out/h.test" {
					t.Fatalf("%s exported for a Transport that was not added", f.GetName())
				}
			}
		}
	}
}
