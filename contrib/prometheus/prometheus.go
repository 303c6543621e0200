// Package wardprom exports ward's types to Prometheus: a [Collector] that reads each type's
// Snapshot when Prometheus scrapes, so the calls themselves pay nothing for metrics (no counter
// is written on any call: the numbers are the ones ward keeps anyway).
//
//	c := wardprom.New("myservice")
//	c.Limiter("api", lim)
//	c.Breaker("payments", brk)
//	c.Shedder("api", shd)
//	prometheus.MustRegister(c)
//
// The metrics, each labelled with the name given when the type was added:
//
//	<ns>_ward_limit{name}                      adaptive limit
//	<ns>_ward_in_flight{kind,name}             calls in flight (kind: adaptive, shed)
//	<ns>_ward_refused_total{kind,name,reason}  refusals since the type was built (reason: limit,
//	                                           breaker, overload)
//	<ns>_ward_latency_seconds{name}            the adaptive limiter's last window response time
//	<ns>_ward_breaker_ratio{name}              a breaker's standing refusal fraction
//	<ns>_ward_shed_cpu_ratio{name}             the shedder's CPU reading, 0 to 1 (absent: unknown)
//	<ns>_ward_shed_capacity{name}              the calls in flight the shedder's window shows
//	<ns>_ward_shed_hot{name}                   1 while the shedder is hot
//
// A scrape folds each breaker's and shedder's window once (a few hundred nanoseconds each) and
// reads the adaptive limiter's atomics; it takes no lock a call takes.
package wardprom

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/shed"
)

// Collector is a prometheus.Collector of ward types. Add types with Limiter, Breaker and Shedder
// (before or after registering it); it is safe for concurrent use. The zero value is not usable:
// build one with [New].
type Collector struct {
	mu       sync.Mutex
	limiters []named[*adaptive.Limiter]
	breakers []named[*breaker.Breaker]
	shedders []named[*shed.Shedder]

	limit, inFlight, refused, latency, ratio, cpu, capacity, hot *prometheus.Desc
}

type named[T any] struct {
	name string
	v    T
}

// New returns a collector whose metric names start with namespace (none if empty).
func New(namespace string) *Collector {
	n := func(s string) string { return prometheus.BuildFQName(namespace, "ward", s) }
	return &Collector{
		limit:    prometheus.NewDesc(n("limit"), "The adaptive limit: calls allowed in flight.", []string{"name"}, nil),
		inFlight: prometheus.NewDesc(n("in_flight"), "Calls in flight.", []string{"kind", "name"}, nil),
		refused:  prometheus.NewDesc(n("refused_total"), "Calls refused.", []string{"kind", "name", "reason"}, nil),
		latency:  prometheus.NewDesc(n("latency_seconds"), "The adaptive limiter's last closed window's mean response time.", []string{"name"}, nil),
		ratio:    prometheus.NewDesc(n("breaker_ratio"), "A breaker's standing refusal fraction.", []string{"name"}, nil),
		cpu:      prometheus.NewDesc(n("shed_cpu_ratio"), "The shedder's CPU reading, 0 to 1 of what the process may use.", []string{"name"}, nil),
		capacity: prometheus.NewDesc(n("shed_capacity"), "The calls in flight the shedder's window shows the server can carry.", []string{"name"}, nil),
		hot:      prometheus.NewDesc(n("shed_hot"), "1 while the shedder is hot.", []string{"name"}, nil),
	}
}

// Limiter adds an adaptive limiter under name.
func (c *Collector) Limiter(name string, l *adaptive.Limiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limiters = append(c.limiters, named[*adaptive.Limiter]{name, l})
}

// Breaker adds a breaker under name.
func (c *Collector) Breaker(name string, b *breaker.Breaker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.breakers = append(c.breakers, named[*breaker.Breaker]{name, b})
}

// Shedder adds a shedder under name.
func (c *Collector) Shedder(name string, s *shed.Shedder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shedders = append(c.shedders, named[*shed.Shedder]{name, s})
}

// Describe sends the descriptions of every metric the collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.inFlight, c.refused, c.latency, c.ratio, c.cpu, c.capacity, c.hot} {
		ch <- d
	}
}

// Collect reads every type's Snapshot and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	limiters, breakers, shedders := c.limiters, c.breakers, c.shedders
	c.mu.Unlock()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for _, l := range limiters {
		s := l.v.Snapshot()
		ch <- prometheus.MustNewConstMetric(c.limit, gauge, float64(s.Limit), l.name)
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(s.InFlight), "adaptive", l.name)
		ch <- prometheus.MustNewConstMetric(c.refused, counter, float64(s.Refused), "adaptive", l.name, "limit")
		ch <- prometheus.MustNewConstMetric(c.latency, gauge, s.Latency.Seconds(), l.name)
	}
	for _, b := range breakers {
		s := b.v.Snapshot()
		ch <- prometheus.MustNewConstMetric(c.ratio, gauge, s.Ratio, b.name)
		ch <- prometheus.MustNewConstMetric(c.refused, counter, float64(s.Refused), "breaker", b.name, "breaker")
	}
	for _, sh := range shedders {
		s := sh.v.Snapshot()
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(s.InFlight), "shed", sh.name)
		ch <- prometheus.MustNewConstMetric(c.refused, counter, float64(s.Refused), "shed", sh.name, "overload")
		ch <- prometheus.MustNewConstMetric(c.capacity, gauge, s.Capacity, sh.name)
		hot := 0.0
		if s.Hot {
			hot = 1
		}
		ch <- prometheus.MustNewConstMetric(c.hot, gauge, hot, sh.name)
		if s.CPU >= 0 {
			ch <- prometheus.MustNewConstMetric(c.cpu, gauge, float64(s.CPU)/1000, sh.name)
		}
	}
}
