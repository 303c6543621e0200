package wardotel

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/shed"
)

func TestRegister(t *testing.T) {
	rule, _ := adaptive.NewFixed(2)
	lim, _ := adaptive.New(rule)
	brk, _ := breaker.New()
	shd, _ := shed.New(shed.WithCPU(func() int { return 950 }))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	reg, err := Register(mp.Meter("test"), Limiter("api", lim), Breaker("db", brk), Shedder("api", shd))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := lim.Acquire()
	b, _ := lim.Acquire()
	if _, ok := lim.Acquire(); ok {
		t.Fatal("a third call passed a limit of 2")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+key(p.Attributes)] = p.Value
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+key(p.Attributes)] = float64(p.Value)
				}
			}
		}
	}
	for k, v := range map[string]float64{
		"ward.limit{api}":                  2,
		"ward.in_flight{adaptive,api}":     2,
		"ward.refused{adaptive,api,limit}": 1,
		"ward.refused{breaker,db,breaker}": 0,
		"ward.breaker.ratio{db}":           0,
		"ward.shed.cpu{api}":               0.95,
		"ward.shed.hot{api}":               1,
		"ward.in_flight{shed,api}":         0,
		"ward.refused{shed,api,overload}":  0,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	a.Pass()
	b.Pass()
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
}

// key renders the attribute values in the order ward.kind, ward.name, ward.reason, ward.outcome.
func key(s attribute.Set) string {
	out := "{"
	for _, k := range []attribute.Key{"ward.kind", "ward.name", "ward.reason", "ward.outcome"} {
		if v, ok := s.Value(k); ok {
			if len(out) > 1 {
				out += ","
			}
			out += v.AsString()
		}
	}
	return out + "}"
}
