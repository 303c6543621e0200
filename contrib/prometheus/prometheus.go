// Package wardprom exports ward's types to Prometheus: a [Collector] that reads each type's counts
// ([ward.Counts]), latency histogram ([ward.Latency]) and state when Prometheus scrapes, so the
// calls themselves pay nothing for metrics beyond the per-P adds the types keep anyway.
//
//	c := wardprom.New("myservice")
//	if err := c.Limiter("api", lim); err != nil { … } // a name used twice for one kind is an error
//	c.Breaker("payments", brk)
//	c.Shedder("api", shd)
//	c.Transport("backend", tr) // every host's breaker, as hosts come and go
//	c.Rate("clients", bucket)  // a rate limiter built with rate.WithCounts
//	c.FailureWindow("logins", fw)
//	c.Pool("db", pl)
//	prometheus.MustRegister(c)
//
// The metrics, each labelled with the kind of guard (adaptive, partition, queue, breaker, shed,
// rate, failurewindow, pool, retry_budget, guard) and the name it was added under:
//
//	<ns>_ward_admitted_total{kind,name}          calls admitted
//	<ns>_ward_refused_total{kind,name,reason}    calls refused (reason: limit, partition, queue,
//	                                             breaker, overload, rate, failures, pool, retry,
//	                                             refused)
//	<ns>_ward_abandoned_total{kind,name}         calls whose context ended while they waited
//	<ns>_ward_settled_total{kind,name,outcome}   admitted calls settled (outcome: pass, fail, ignore)
//	<ns>_ward_call_duration_seconds{kind,name}   histogram of the response times a type measures
//	                                             (adaptive: its timed calls; shed)
//	<ns>_ward_limit{name}                        adaptive limit
//	<ns>_ward_in_flight{kind,name}               calls in flight (adaptive, partition, shed; pool:
//	                                             loans under way)
//	<ns>_ward_partition_guarantee{name}          calls in flight a partition is guaranteed
//	<ns>_ward_queue_waiting{name}                callers waiting in a Queue's line
//	<ns>_ward_latency_seconds{name}              the adaptive limiter's last window response time
//	<ns>_ward_breaker_ratio{name}                a breaker's standing refusal fraction
//	<ns>_ward_shed_cpu_ratio{name}               the shedder's CPU reading, 0 to 1 (absent: unknown)
//	<ns>_ward_shed_capacity{name}                the calls in flight the shedder's window shows
//	<ns>_ward_shed_hot{name}                     1 while the shedder is hot
//	<ns>_ward_retry_budget_tokens{name}          tokens left in a retry budget
//
// The calls of a guard add up: admitted + refused + abandoned is every call it was asked about,
// and admitted − settled is the calls in flight. A retry budget counts in its own sense (admitted
// and refused are retries, settled are attempts: see wardhttp.RetryBudget.Counts).
//
// Names: a Partitions added under name exports each partition as name/partition; a Transport
// added under name exports each host's breaker as name/host, read from Transport.Breakers at
// every scrape, so a host's breaker appears when the Transport makes it and leaves when it is
// swept. Adding a name already used for the same kind is an error, so that no scrape ever meets
// two series with one label set; a host breaker whose name meets one added by hand is left out.
//
// A scrape folds each type's per-P rows and windows once (a few hundred nanoseconds each) and
// takes no lock a call takes.
package wardprom

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

// ErrDuplicate is matched, with errors.Is, by the error of adding a name already used for the same
// kind of guard.
var ErrDuplicate = errors.New("wardprom: name already added")

// Collector is a prometheus.Collector of ward types. Add types with its methods (before or after
// registering it); it is safe for concurrent use. The zero value is not usable: build one with
// [New].
type Collector struct {
	mu      sync.Mutex
	entries []entry
	names   map[key]bool

	admitted, refused, abandoned, settled, duration                         *prometheus.Desc
	limit, inFlight, guarantee, waiting, latency, ratio, cpu, capacity, hot *prometheus.Desc
	tokens                                                                  *prometheus.Desc
}

type key struct{ kind, name string }

// entry is one added type: v is the value, read at every scrape.
type entry struct {
	kind, name, reason string
	v                  any
}

// New returns a collector whose metric names start with namespace (none if empty).
func New(namespace string) *Collector {
	n := func(s string) string { return prometheus.BuildFQName(namespace, "ward", s) }
	kn := []string{"kind", "name"}
	nm := []string{"name"}
	return &Collector{
		names:     map[key]bool{},
		admitted:  prometheus.NewDesc(n("admitted_total"), "Calls admitted.", kn, nil),
		refused:   prometheus.NewDesc(n("refused_total"), "Calls refused.", []string{"kind", "name", "reason"}, nil),
		abandoned: prometheus.NewDesc(n("abandoned_total"), "Calls whose context ended while they waited for admission.", kn, nil),
		settled:   prometheus.NewDesc(n("settled_total"), "Admitted calls settled, by outcome.", []string{"kind", "name", "outcome"}, nil),
		duration:  prometheus.NewDesc(n("call_duration_seconds"), "Response times of the calls the guard timed.", kn, nil),
		limit:     prometheus.NewDesc(n("limit"), "The adaptive limit: calls allowed in flight.", nm, nil),
		inFlight:  prometheus.NewDesc(n("in_flight"), "Calls in flight.", kn, nil),
		guarantee: prometheus.NewDesc(n("partition_guarantee"), "Calls in flight a partition is guaranteed at the current limit.", nm, nil),
		waiting:   prometheus.NewDesc(n("queue_waiting"), "Callers waiting in a queue's line.", nm, nil),
		latency:   prometheus.NewDesc(n("latency_seconds"), "The adaptive limiter's last closed window's mean response time.", nm, nil),
		ratio:     prometheus.NewDesc(n("breaker_ratio"), "A breaker's standing refusal fraction.", nm, nil),
		cpu:       prometheus.NewDesc(n("shed_cpu_ratio"), "The shedder's CPU reading, 0 to 1 of what the process may use.", nm, nil),
		capacity:  prometheus.NewDesc(n("shed_capacity"), "The calls in flight the shedder's window shows the server can carry.", nm, nil),
		hot:       prometheus.NewDesc(n("shed_hot"), "1 while the shedder is hot.", nm, nil),
		tokens:    prometheus.NewDesc(n("retry_budget_tokens"), "Tokens left in a retry budget.", nm, nil),
	}
}

// add adds v under kind and name, or fails if the pair is taken.
func (c *Collector) add(kind, name, reason string, v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{kind, name}
	if c.names[k] {
		return fmt.Errorf("%w: %s %q", ErrDuplicate, kind, name)
	}
	c.names[k] = true
	c.entries = append(c.entries, entry{kind, name, reason, v})
	return nil
}

// Limiter adds an adaptive limiter under name.
func (c *Collector) Limiter(name string, l *adaptive.Limiter) error {
	return c.add("adaptive", name, "limit", l)
}

// Partitions adds each partition of ps under name/partition. The limiter they split is added
// apart, if wanted, with Limiter.
func (c *Collector) Partitions(name string, ps *adaptive.Partitions) error {
	parts := ps.Partitions()
	c.mu.Lock()
	for _, p := range parts {
		if c.names[key{"partition", name + "/" + p.Name()}] {
			c.mu.Unlock()
			return fmt.Errorf("%w: partition %q", ErrDuplicate, name+"/"+p.Name())
		}
	}
	c.mu.Unlock()
	for _, p := range parts {
		if err := c.add("partition", name+"/"+p.Name(), "partition", p); err != nil {
			return err
		}
	}
	return nil
}

// Queue adds a limiter's waiting line under name. Its limiter is added apart, if wanted, with
// Limiter.
func (c *Collector) Queue(name string, q *adaptive.Queue) error {
	return c.add("queue", name, "queue", q)
}

// Breaker adds a breaker under name.
func (c *Collector) Breaker(name string, b *breaker.Breaker) error {
	return c.add("breaker", name, "breaker", b)
}

// Shedder adds a shedder under name.
func (c *Collector) Shedder(name string, s *shed.Shedder) error {
	return c.add("shed", name, "overload", s)
}

// Transport adds a wardhttp.Transport under name: every host's breaker (kind breaker, name
// name/host), read at each scrape, and its retry budget (kind retry_budget, name name).
func (c *Collector) Transport(name string, t *wardhttp.Transport) error {
	c.mu.Lock()
	taken := c.names[key{"retry_budget", name}]
	c.mu.Unlock()
	if taken { // checked first, as Partitions does: a Transport is added whole or not at all
		return fmt.Errorf("%w: retry_budget %q", ErrDuplicate, name)
	}
	if err := c.add("transport", name, "", t); err != nil {
		return err
	}
	return c.add("retry_budget", name, "retry", t.Budget())
}

// RateLimiter is what [Collector.Rate] reads: a *rate.BucketLimiter, *rate.SlidingLimiter or
// *rate.PeriodLimiter.
type RateLimiter interface {
	ward.Counter
	Counting() bool
}

// Rate adds a rate limiter under name (kind rate, reason rate). A BucketLimiter or PeriodLimiter
// built without rate.WithCounts counts nothing, and adding one is an error.
func (c *Collector) Rate(name string, l RateLimiter) error {
	if !l.Counting() {
		return errNotCounting("rate", name)
	}
	return c.add("rate", name, "rate", l)
}

// FailureWindow adds a failure window under name (kind failurewindow, reason failures): the
// requests its Admit admitted and refused, and the failures reported (see
// failurewindow.Window.Counts for what its settled counts hold).
func (c *Collector) FailureWindow(name string, w *failurewindow.Window) error {
	return c.add("failurewindow", name, "failures", w)
}

// PoolStats is what [Collector.Pool] reads: a *pool.Pool of any resource type.
type PoolStats interface {
	ward.Counter
	Stats() pool.Stats
}

// Pool adds a pool under name (kind pool, reason pool): its loans, counted when they end, the
// Acquires its ward refused and those abandoned while waiting, and its loans under way as in
// flight.
func (c *Collector) Pool(name string, p PoolStats) error {
	return c.add("pool", name, "pool", p)
}

// errNotCounting is the error of adding a guard that says it counts nothing.
func errNotCounting(kind, name string) error {
	return fmt.Errorf("wardprom: %s %q counts nothing (a rate limiter needs rate.WithCounts)", kind, name)
}

// RetryBudget adds a retry budget under name.
func (c *Collector) RetryBudget(name string, b *wardhttp.RetryBudget) error {
	return c.add("retry_budget", name, "retry", b)
}

// Guard adds any other guard that counts ([ward.Counter]: a guard of your own) under kind and
// name; its refusals are labelled reason. A guard that also implements [ward.Timed] exports its
// histogram. A guard with a Counting method that reports false (a rate limiter built without
// rate.WithCounts) is an error.
func (c *Collector) Guard(kind, name, reason string, g ward.Counter) error {
	if kind == "" || kind == "transport" {
		return fmt.Errorf("wardprom: kind %q: a kind of guard (rate, failurewindow, pool, …)", kind)
	}
	if n, ok := g.(interface{ Counting() bool }); ok && !n.Counting() {
		return errNotCounting(kind, name)
	}
	return c.add(kind, name, reason, g)
}

// Describe sends the descriptions of every metric the collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.admitted, c.refused, c.abandoned, c.settled, c.duration,
		c.limit, c.inFlight, c.guarantee, c.waiting, c.latency, c.ratio, c.cpu, c.capacity, c.hot, c.tokens} {
		ch <- d
	}
}

// Collect reads every type and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	entries := c.entries
	taken := make(map[key]bool, len(c.names))
	for k := range c.names {
		taken[k] = true
	}
	c.mu.Unlock()
	for _, e := range entries {
		if t, ok := e.v.(*wardhttp.Transport); ok {
			for host, b := range t.Breakers() {
				k := key{"breaker", e.name + "/" + host}
				if taken[k] {
					continue
				}
				taken[k] = true
				c.collect(ch, entry{"breaker", k.name, "breaker", b})
			}
			continue
		}
		c.collect(ch, e)
	}
}

func (c *Collector) collect(ch chan<- prometheus.Metric, e entry) {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	if n, ok := e.v.(ward.Counter); ok {
		k := n.Counts()
		ch <- prometheus.MustNewConstMetric(c.admitted, counter, float64(k.Admitted), e.kind, e.name)
		ch <- prometheus.MustNewConstMetric(c.refused, counter, float64(k.Refused), e.kind, e.name, e.reason)
		ch <- prometheus.MustNewConstMetric(c.abandoned, counter, float64(k.Abandoned), e.kind, e.name)
		ch <- prometheus.MustNewConstMetric(c.settled, counter, float64(k.Passed), e.kind, e.name, "pass")
		ch <- prometheus.MustNewConstMetric(c.settled, counter, float64(k.Failed), e.kind, e.name, "fail")
		ch <- prometheus.MustNewConstMetric(c.settled, counter, float64(k.Ignored), e.kind, e.name, "ignore")
	}
	if t, ok := e.v.(ward.Timed); ok {
		ch <- histogram(c.duration, t.Latency(), e.kind, e.name)
	}
	switch v := e.v.(type) {
	case *adaptive.Limiter:
		s := v.Snapshot()
		ch <- prometheus.MustNewConstMetric(c.limit, gauge, float64(s.Limit), e.name)
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(s.InFlight), e.kind, e.name)
		ch <- prometheus.MustNewConstMetric(c.latency, gauge, s.Latency.Seconds(), e.name)
	case *adaptive.Partition:
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(v.InFlight()), e.kind, e.name)
		ch <- prometheus.MustNewConstMetric(c.guarantee, gauge, float64(v.Guarantee()), e.name)
	case *adaptive.Queue:
		ch <- prometheus.MustNewConstMetric(c.waiting, gauge, float64(v.Waiting()), e.name)
	case *breaker.Breaker:
		s := v.Snapshot()
		ch <- prometheus.MustNewConstMetric(c.ratio, gauge, s.Ratio, e.name)
	case *shed.Shedder:
		s := v.Snapshot()
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(s.InFlight), e.kind, e.name)
		ch <- prometheus.MustNewConstMetric(c.capacity, gauge, s.Capacity, e.name)
		hot := 0.0
		if s.Hot {
			hot = 1
		}
		ch <- prometheus.MustNewConstMetric(c.hot, gauge, hot, e.name)
		if s.CPU >= 0 {
			ch <- prometheus.MustNewConstMetric(c.cpu, gauge, float64(s.CPU)/1000, e.name)
		}
	case *wardhttp.RetryBudget:
		ch <- prometheus.MustNewConstMetric(c.tokens, gauge, v.Tokens(), e.name)
	case PoolStats:
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(v.Stats().Lent), e.kind, e.name)
	}
}

// histogram is l as a Prometheus histogram: cumulative buckets with their bounds in seconds.
func histogram(d *prometheus.Desc, l ward.Latency, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, ward.LatencyBuckets-1)
	var n uint64
	for i := 0; i < ward.LatencyBuckets-1; i++ {
		n += l.Buckets[i]
		buckets[ward.LatencyBound(i).Seconds()] = n
	}
	return prometheus.MustNewConstHistogram(d, l.Count, l.Sum.Seconds(), buckets, labels...)
}
