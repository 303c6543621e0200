// Package wardotel exports ward's types as OpenTelemetry observable instruments: each is read
// from the type's counts ([ward.Counts]) and state when the meter's reader collects, so the calls
// themselves pay nothing for metrics beyond the per-P adds the types keep anyway. The latency
// histograms ([ward.Latency]) are read by a [Producer] given to the reader, since OpenTelemetry
// has no observable histogram.
//
//	reg, err := wardotel.Register(meter,
//		wardotel.Limiter("api", lim), wardotel.Breaker("payments", brk), wardotel.Transport("backend", tr))
//	defer reg.Unregister()
//	prod, err := wardotel.Producer(wardotel.Limiter("api", lim))
//	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(prod))
//
// The instruments, each with the attributes ward.kind (adaptive, partition, queue, breaker, shed,
// rate, failurewindow, pool, retry_budget, or the kind given to [Guard]) and ward.name:
//
//	ward.admitted              counter    calls admitted
//	ward.refused               counter    calls refused (ward.reason: limit, partition, queue,
//	                                      breaker, overload, rate, failures, pool, retry, or
//	                                      Guard's)
//	ward.abandoned             counter    calls whose context ended while they waited
//	ward.settled               counter    admitted calls settled (ward.outcome: pass, fail, ignore)
//	ward.call.duration         histogram  response times a type measures, s (from [Producer])
//	ward.limit                 gauge      adaptive limit
//	ward.in_flight             gauge      calls in flight (adaptive, partition, shed; pool: loans
//	                                      under way)
//	ward.partition.guarantee   gauge      calls in flight a partition is guaranteed
//	ward.queue.waiting         gauge      callers waiting in a Queue's line
//	ward.latency               gauge      the adaptive limiter's last window response time, s
//	ward.breaker.ratio         gauge      a breaker's standing refusal fraction
//	ward.shed.cpu              gauge      the shedder's CPU reading, 0 to 1 (absent: unknown)
//	ward.shed.capacity         gauge      the calls in flight the shedder's window shows
//	ward.shed.hot              gauge      1 while the shedder is hot
//	ward.retry_budget.tokens   gauge      tokens left in a retry budget
//
// Sources are read at every collection, not fixed when registered: a [Transport] source observes
// each host's breaker (ward.name name/host) that the Transport holds at that collection, so a new
// host appears without registering again. Two sources of one kind under one name are an error at
// Register; a host breaker whose name meets a source given by hand is left out.
package wardotel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

// ErrDuplicate is matched, with errors.Is, by the error of registering two sources of one kind
// under one name.
var ErrDuplicate = errors.New("wardotel: name already used")

// Source is a ward type to observe, made by [Limiter], [Partitions], [Queue], [Breaker],
// [Shedder], [Transport], [RetryBudget] or [Guard].
type Source struct {
	kind, name, reason string
	v                  any
	parts              *adaptive.Partitions
}

// Limiter observes an adaptive limiter under name.
func Limiter(name string, l *adaptive.Limiter) Source {
	return Source{kind: "adaptive", name: name, reason: "limit", v: l}
}

// Partitions observes each partition of ps under name/partition.
func Partitions(name string, ps *adaptive.Partitions) Source {
	return Source{kind: "partition", name: name, reason: "partition", parts: ps}
}

// Queue observes a limiter's waiting line under name.
func Queue(name string, q *adaptive.Queue) Source {
	return Source{kind: "queue", name: name, reason: "queue", v: q}
}

// Breaker observes a breaker under name.
func Breaker(name string, b *breaker.Breaker) Source {
	return Source{kind: "breaker", name: name, reason: "breaker", v: b}
}

// Shedder observes a shedder under name.
func Shedder(name string, s *shed.Shedder) Source {
	return Source{kind: "shed", name: name, reason: "overload", v: s}
}

// Transport observes a wardhttp.Transport under name: each host's breaker (ward.name name/host),
// listed afresh at every collection, and its retry budget (ward.kind retry_budget).
func Transport(name string, t *wardhttp.Transport) Source {
	return Source{kind: "transport", name: name, v: t}
}

// RateLimiter is what [Rate] observes: a *rate.BucketLimiter, *rate.SlidingLimiter or
// *rate.PeriodLimiter.
type RateLimiter interface {
	ward.Counter
	Counting() bool
}

// Rate observes a rate limiter under name (ward.kind rate, ward.reason rate). A BucketLimiter or
// PeriodLimiter built without rate.WithCounts counts nothing: Register and Producer refuse it.
func Rate(name string, l RateLimiter) Source {
	return Source{kind: "rate", name: name, reason: "rate", v: l}
}

// FailureWindow observes a failure window under name (ward.kind failurewindow, ward.reason
// failures): the requests its Admit admitted and refused, and the failures reported (see
// failurewindow.Window.Counts for what its settled counts hold).
func FailureWindow(name string, w *failurewindow.Window) Source {
	return Source{kind: "failurewindow", name: name, reason: "failures", v: w}
}

// PoolStats is what [Pool] observes: a *pool.Pool of any resource type.
type PoolStats interface {
	ward.Counter
	Stats() pool.Stats
}

// Pool observes a pool under name (ward.kind pool, ward.reason pool): its loans, counted when
// they end, the Acquires its ward refused and those abandoned while waiting, and its loans under
// way as ward.in_flight.
func Pool(name string, p PoolStats) Source {
	return Source{kind: "pool", name: name, reason: "pool", v: p}
}

// RetryBudget observes a retry budget under name.
func RetryBudget(name string, b *wardhttp.RetryBudget) Source {
	return Source{kind: "retry_budget", name: name, reason: "retry", v: b}
}

// Guard observes any other guard that counts ([ward.Counter]: a guard of your own; one with a
// Counting method that reports false is refused at Register) under kind and name; its refusals carry
// ward.reason reason. A guard that implements [ward.Timed] too has a histogram in [Producer].
func Guard(kind, name, reason string, g ward.Counter) Source {
	return Source{kind: kind, name: name, reason: reason, v: g}
}

type srcKey struct{ kind, name string }

// expand returns every source as the one kinds it observes (a Partitions as its partitions, a
// Transport as its budget; its breakers are listed at each collection), or an error for a
// duplicate or an empty kind.
func expand(sources []Source) ([]Source, map[srcKey]bool, error) {
	var out []Source
	seen := map[srcKey]bool{}
	add := func(s Source) error {
		if s.kind == "" || s.v == nil {
			return fmt.Errorf("wardotel: source %q: no kind or no value", s.name)
		}
		if n, ok := s.v.(interface{ Counting() bool }); ok && !n.Counting() {
			return fmt.Errorf("wardotel: %s %q counts nothing (a rate limiter needs rate.WithCounts)", s.kind, s.name)
		}
		k := srcKey{s.kind, s.name}
		if seen[k] {
			return fmt.Errorf("%w: %s %q", ErrDuplicate, s.kind, s.name)
		}
		seen[k] = true
		out = append(out, s)
		return nil
	}
	for _, s := range sources {
		var err error
		switch {
		case s.parts != nil:
			for _, p := range s.parts.Partitions() {
				if err = add(Source{kind: s.kind, name: s.name + "/" + p.Name(), reason: s.reason, v: p}); err != nil {
					break
				}
			}
		case s.kind == "transport":
			if err = add(s); err == nil {
				err = add(RetryBudget(s.name, s.v.(*wardhttp.Transport).Budget()))
			}
		default:
			err = add(s)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return out, seen, nil
}

// each calls f for every source to observe now: the Transports' host breakers listed afresh.
func each(srcs []Source, taken map[srcKey]bool, f func(Source)) {
	var hosts map[srcKey]bool
	for _, s := range srcs {
		t, ok := s.v.(*wardhttp.Transport)
		if !ok {
			f(s)
			continue
		}
		for host, b := range t.Breakers() {
			k := srcKey{"breaker", s.name + "/" + host}
			if taken[k] || hosts[k] {
				continue
			}
			if hosts == nil {
				hosts = map[srcKey]bool{}
			}
			hosts[k] = true
			f(Breaker(k.name, b))
		}
	}
}

type instruments struct {
	limit, inFlight, guarantee, waiting, latency, ratio, cpu, capacity, hot, tokens metric.Float64ObservableGauge
	admitted, refused, abandoned, settled                                           metric.Int64ObservableCounter
}

// Register makes the instruments on meter and one callback that observes every source; call
// Unregister on the result to stop observing. Two sources of one kind under one name are an
// error matching [ErrDuplicate].
func Register(meter metric.Meter, sources ...Source) (metric.Registration, error) {
	srcs, taken, err := expand(sources)
	if err != nil {
		return nil, err
	}
	var in instruments
	gauge := func(name, unit, desc string) metric.Float64ObservableGauge {
		if err != nil {
			return nil
		}
		var g metric.Float64ObservableGauge
		g, err = meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return g
	}
	counter := func(name, desc string) metric.Int64ObservableCounter {
		if err != nil {
			return nil
		}
		var c metric.Int64ObservableCounter
		c, err = meter.Int64ObservableCounter(name, metric.WithUnit("{call}"), metric.WithDescription(desc))
		return c
	}
	in.limit = gauge("ward.limit", "{call}", "The adaptive limit: calls allowed in flight.")
	in.inFlight = gauge("ward.in_flight", "{call}", "Calls in flight.")
	in.guarantee = gauge("ward.partition.guarantee", "{call}", "Calls in flight a partition is guaranteed at the current limit.")
	in.waiting = gauge("ward.queue.waiting", "{call}", "Callers waiting in a queue's line.")
	in.latency = gauge("ward.latency", "s", "The adaptive limiter's last closed window's mean response time.")
	in.ratio = gauge("ward.breaker.ratio", "1", "A breaker's standing refusal fraction.")
	in.cpu = gauge("ward.shed.cpu", "1", "The shedder's CPU reading, 0 to 1 of what the process may use.")
	in.capacity = gauge("ward.shed.capacity", "{call}", "The calls in flight the shedder's window shows the server can carry.")
	in.hot = gauge("ward.shed.hot", "1", "1 while the shedder is hot.")
	in.tokens = gauge("ward.retry_budget.tokens", "{token}", "Tokens left in a retry budget.")
	in.admitted = counter("ward.admitted", "Calls admitted.")
	in.refused = counter("ward.refused", "Calls refused.")
	in.abandoned = counter("ward.abandoned", "Calls whose context ended while they waited for admission.")
	in.settled = counter("ward.settled", "Admitted calls settled, by outcome.")
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		each(srcs, taken, func(s Source) { observe(o, &in, s) })
		return nil
	}, in.limit, in.inFlight, in.guarantee, in.waiting, in.latency, in.ratio, in.cpu, in.capacity, in.hot, in.tokens,
		in.admitted, in.refused, in.abandoned, in.settled)
}

func observe(o metric.Observer, in *instruments, s Source) {
	name := attribute.String("ward.name", s.name)
	kind := attribute.String("ward.kind", s.kind)
	both := metric.WithAttributes(kind, name)
	only := metric.WithAttributes(name)
	if c, ok := s.v.(ward.Counter); ok {
		k := c.Counts()
		o.ObserveInt64(in.admitted, int64(k.Admitted), both)
		o.ObserveInt64(in.refused, int64(k.Refused), metric.WithAttributes(kind, name, attribute.String("ward.reason", s.reason)))
		o.ObserveInt64(in.abandoned, int64(k.Abandoned), both)
		for _, x := range []struct {
			o string
			n uint64
		}{{"pass", k.Passed}, {"fail", k.Failed}, {"ignore", k.Ignored}} {
			o.ObserveInt64(in.settled, int64(x.n), metric.WithAttributes(kind, name, attribute.String("ward.outcome", x.o)))
		}
	}
	switch v := s.v.(type) {
	case *adaptive.Limiter:
		sn := v.Snapshot()
		o.ObserveFloat64(in.limit, float64(sn.Limit), only)
		o.ObserveFloat64(in.inFlight, float64(sn.InFlight), both)
		o.ObserveFloat64(in.latency, sn.Latency.Seconds(), only)
	case *adaptive.Partition:
		o.ObserveFloat64(in.inFlight, float64(v.InFlight()), both)
		o.ObserveFloat64(in.guarantee, float64(v.Guarantee()), only)
	case *adaptive.Queue:
		o.ObserveFloat64(in.waiting, float64(v.Waiting()), only)
	case *breaker.Breaker:
		sn := v.Snapshot()
		o.ObserveFloat64(in.ratio, sn.Ratio, only)
	case *shed.Shedder:
		sn := v.Snapshot()
		o.ObserveFloat64(in.inFlight, float64(sn.InFlight), both)
		o.ObserveFloat64(in.capacity, sn.Capacity, only)
		hot := 0.0
		if sn.Hot {
			hot = 1
		}
		o.ObserveFloat64(in.hot, hot, only)
		if sn.CPU >= 0 {
			o.ObserveFloat64(in.cpu, float64(sn.CPU)/1000, only)
		}
	case *wardhttp.RetryBudget:
		o.ObserveFloat64(in.tokens, v.Tokens(), only)
	case PoolStats:
		o.ObserveFloat64(in.inFlight, float64(v.Stats().Lent), both)
	}
}

// Producer returns a producer of the latency histograms (ward.call.duration, in seconds,
// cumulative since each type was built) of every source that times its calls ([ward.Timed]), for
// a reader: sdkmetric.NewManualReader(sdkmetric.WithProducer(p)), or a periodic reader's
// WithProducer. It reads the sources when the reader collects. Two sources of one kind under one
// name are an error matching [ErrDuplicate].
func Producer(sources ...Source) (sdkmetric.Producer, error) {
	srcs, taken, err := expand(sources)
	if err != nil {
		return nil, err
	}
	return &producer{srcs: srcs, taken: taken, start: time.Now()}, nil
}

type producer struct {
	srcs  []Source
	taken map[srcKey]bool
	start time.Time
}

// bounds are the histogram's bucket bounds in seconds.
var bounds = func() []float64 {
	b := make([]float64, ward.LatencyBuckets-1)
	for i := range b {
		b[i] = ward.LatencyBound(i).Seconds()
	}
	return b
}()

func (p *producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	var pts []metricdata.HistogramDataPoint[float64]
	each(p.srcs, p.taken, func(s Source) {
		t, ok := s.v.(ward.Timed)
		if !ok {
			return
		}
		l := t.Latency()
		pts = append(pts, metricdata.HistogramDataPoint[float64]{
			Attributes:   attribute.NewSet(attribute.String("ward.kind", s.kind), attribute.String("ward.name", s.name)),
			StartTime:    p.start,
			Time:         now,
			Count:        l.Count,
			Bounds:       bounds,
			BucketCounts: append([]uint64(nil), l.Buckets[:]...),
			Sum:          l.Sum.Seconds(),
		})
	})
	if len(pts) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "github.com/wardgo/ward/contrib/otel"},
		Metrics: []metricdata.Metrics{{
			Name:        "ward.call.duration",
			Description: "Response times of the calls the guard timed.",
			Unit:        "s",
			Data:        metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: pts},
		}},
	}}, nil
}
