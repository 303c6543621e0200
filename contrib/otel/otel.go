// Package wardotel exports ward's types as OpenTelemetry observable instruments: each is read
// from the type's Snapshot when the meter's reader collects, so the calls themselves pay nothing
// for metrics.
//
//	reg, err := wardotel.Register(meter,
//		wardotel.Limiter("api", lim), wardotel.Breaker("payments", brk), wardotel.Shedder("api", shd))
//	defer reg.Unregister()
//
// The instruments, each with the attribute ward.name (and ward.kind, ward.reason where shown):
//
//	ward.limit                 gauge    adaptive limit
//	ward.in_flight             gauge    calls in flight (ward.kind: adaptive, shed)
//	ward.refused               counter  refusals since the type was built (ward.kind, ward.reason:
//	                                    limit, breaker, overload)
//	ward.latency               gauge    the adaptive limiter's last window response time, s
//	ward.breaker.ratio         gauge    a breaker's standing refusal fraction
//	ward.shed.cpu              gauge    the shedder's CPU reading, 0 to 1 (absent: unknown)
//	ward.shed.capacity         gauge    the calls in flight the shedder's window shows
//	ward.shed.hot              gauge    1 while the shedder is hot
package wardotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/shed"
)

// Source is a ward type to observe, made by [Limiter], [Breaker] or [Shedder].
type Source struct {
	name string
	lim  *adaptive.Limiter
	brk  *breaker.Breaker
	shd  *shed.Shedder
}

// Limiter observes an adaptive limiter under name.
func Limiter(name string, l *adaptive.Limiter) Source { return Source{name: name, lim: l} }

// Breaker observes a breaker under name.
func Breaker(name string, b *breaker.Breaker) Source { return Source{name: name, brk: b} }

// Shedder observes a shedder under name.
func Shedder(name string, s *shed.Shedder) Source { return Source{name: name, shd: s} }

type instruments struct {
	limit, inFlight, latency, ratio, cpu, capacity, hot metric.Float64ObservableGauge
	refused                                             metric.Int64ObservableCounter
}

// Register makes the instruments on meter and one callback that observes every source; call
// Unregister on the result to stop observing.
func Register(meter metric.Meter, sources ...Source) (metric.Registration, error) {
	var in instruments
	var err error
	gauge := func(name, unit, desc string) metric.Float64ObservableGauge {
		if err != nil {
			return nil
		}
		var g metric.Float64ObservableGauge
		g, err = meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return g
	}
	in.limit = gauge("ward.limit", "{call}", "The adaptive limit: calls allowed in flight.")
	in.inFlight = gauge("ward.in_flight", "{call}", "Calls in flight.")
	in.latency = gauge("ward.latency", "s", "The adaptive limiter's last closed window's mean response time.")
	in.ratio = gauge("ward.breaker.ratio", "1", "A breaker's standing refusal fraction.")
	in.cpu = gauge("ward.shed.cpu", "1", "The shedder's CPU reading, 0 to 1 of what the process may use.")
	in.capacity = gauge("ward.shed.capacity", "{call}", "The calls in flight the shedder's window shows the server can carry.")
	in.hot = gauge("ward.shed.hot", "1", "1 while the shedder is hot.")
	if err != nil {
		return nil, err
	}
	if in.refused, err = meter.Int64ObservableCounter("ward.refused", metric.WithUnit("{call}"), metric.WithDescription("Calls refused.")); err != nil {
		return nil, err
	}
	srcs := append([]Source(nil), sources...)
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range srcs {
			observe(o, &in, s)
		}
		return nil
	}, in.limit, in.inFlight, in.latency, in.ratio, in.cpu, in.capacity, in.hot, in.refused)
}

func observe(o metric.Observer, in *instruments, s Source) {
	name := attribute.String("ward.name", s.name)
	kind := func(k string) attribute.KeyValue { return attribute.String("ward.kind", k) }
	reason := func(r string) attribute.KeyValue { return attribute.String("ward.reason", r) }
	switch {
	case s.lim != nil:
		v := s.lim.Snapshot()
		o.ObserveFloat64(in.limit, float64(v.Limit), metric.WithAttributes(name))
		o.ObserveFloat64(in.inFlight, float64(v.InFlight), metric.WithAttributes(name, kind("adaptive")))
		o.ObserveFloat64(in.latency, v.Latency.Seconds(), metric.WithAttributes(name))
		o.ObserveInt64(in.refused, v.Refused, metric.WithAttributes(name, kind("adaptive"), reason("limit")))
	case s.brk != nil:
		v := s.brk.Snapshot()
		o.ObserveFloat64(in.ratio, v.Ratio, metric.WithAttributes(name))
		o.ObserveInt64(in.refused, v.Refused, metric.WithAttributes(name, kind("breaker"), reason("breaker")))
	case s.shd != nil:
		v := s.shd.Snapshot()
		o.ObserveFloat64(in.inFlight, float64(v.InFlight), metric.WithAttributes(name, kind("shed")))
		o.ObserveInt64(in.refused, v.Refused, metric.WithAttributes(name, kind("shed"), reason("overload")))
		o.ObserveFloat64(in.capacity, v.Capacity, metric.WithAttributes(name))
		hot := 0.0
		if v.Hot {
			hot = 1
		}
		o.ObserveFloat64(in.hot, hot, metric.WithAttributes(name))
		if v.CPU >= 0 {
			o.ObserveFloat64(in.cpu, float64(v.CPU)/1000, metric.WithAttributes(name))
		}
	}
}
