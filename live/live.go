package live

import (
	"context"
	"math"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// ErrInvalid is matched, with errors.Is, by every configuration error of this package (and by
// ward.ErrInvalid); the message names the argument or option.
var ErrInvalid = contract.Invalid("live: invalid configuration")

// Defaults of [New].
const (
	DefaultEvery   = time.Second // the least time between two samples
	DefaultHistory = 300         // samples kept: five minutes at DefaultEvery
	MaxHistory     = 100_000     // the most samples WithHistory may keep
)

// Page is a live view of the guards a server registered with it, and an http.Handler that
// serves it: an HTML page whose charts of the last minutes update as it polls, and the same data
// as JSON for tools. See the package doc for what it shows and when it samples.
//
// A Page is safe for concurrent use: guards may be added and removed while it is served and
// sampled. It must not be copied after first use. The zero value is not usable: build one with
// [New].
type Page struct {
	_ noCopy

	clock   func() time.Time
	every   time.Duration
	history int

	mu      sync.Mutex
	times   []int64 // ring of sample instants, Unix milliseconds
	head    int     // where the next sample goes
	count   int     // samples held, at most history
	last    time.Time
	guards  []*guard
	scratch Readings
}

// noCopy makes go vet's copylocks check report a copied Page.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// guard is one registered guard and the history of its series.
type guard struct {
	name, kind string
	read       func(*Readings)
	series     []*series
}

// series is one reading's history, aligned with the Page's ring of instants; NaN where the
// guard did not report it.
type series struct {
	name, unit string
	counter    bool
	vals       []float64
}

// Option configures a [Page]; [New] applies the options in order and returns the first error.
type Option func(*config) error

type config struct {
	clock   func() time.Time
	every   time.Duration
	history int
}

// WithClock replaces the clock the Page stamps its samples with and decides when one is due by
// (time.Now by default). For tests. A nil clock is an error.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return contract.Field(ErrInvalid, "WithClock", "nil", "a function")
		}
		c.clock = now
		return nil
	}
}

// WithEvery sets the least time between two samples, and how often [Page.Run] samples and the
// page polls ([DefaultEvery]). At least a millisecond.
func WithEvery(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return contract.Field(ErrInvalid, "WithEvery", d, ">= 1ms")
		}
		c.every = d
		return nil
	}
}

// WithHistory sets how many samples are kept ([DefaultHistory]), in [2, [MaxHistory]]: the
// charts span history × every.
func WithHistory(n int) Option {
	return func(c *config) error {
		if n < 2 || n > MaxHistory {
			return contract.Field(ErrInvalid, "WithHistory", n, "in [2, 100000]")
		}
		c.history = n
		return nil
	}
}

// New returns a Page with no guards. It starts no goroutine.
func New(opts ...Option) (*Page, error) {
	c := config{clock: time.Now, every: DefaultEvery, history: DefaultHistory}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return nil, err
	}
	return &Page{clock: c.clock, every: c.every, history: c.history, times: make([]int64, c.history)}, nil
}

// Add registers a guard of any kind under name: read is called at each sample and reports the
// guard's readings through [Readings.Gauge] and [Readings.Counter]. kind is the label the page
// shows beside the name ("adaptive limiter", "my cache"). A name already registered, an empty
// name or a nil read is an error naming the argument. The typed methods ([Page.Limiter],
// [Page.Breaker], ...) are Add with a read of that type's snapshot.
func (p *Page) Add(name, kind string, read func(*Readings)) error {
	if read == nil {
		return contract.Field(ErrInvalid, "read", "nil", "a function")
	}
	return p.add(name, kind, read)
}

func (p *Page) add(name, kind string, read func(*Readings)) error {
	if strings.TrimSpace(name) == "" {
		return contract.Field(ErrInvalid, "name", "empty", "a name")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.guards {
		if g.name == name {
			return contract.Field(ErrInvalid, "name", name, "a name not yet registered")
		}
	}
	p.guards = append(p.guards, &guard{name: name, kind: kind, read: read})
	return nil
}

// Remove forgets the guard registered under name and its history, and reports whether there
// was one.
func (p *Page) Remove(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, g := range p.guards {
		if g.name == name {
			p.guards = append(p.guards[:i], p.guards[i+1:]...)
			return true
		}
	}
	return false
}

// Sample reads every guard now, if a sample is due: when none has been taken, when Every has
// passed since the last, or when the clock reads earlier than the last (it moved back). It
// reports whether it sampled. Serving the page or its JSON calls it, so a Page nobody runs
// samples while someone watches.
func (p *Page) Sample() bool {
	now := p.clock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count > 0 && now.Sub(p.last) < p.every && !now.Before(p.last) {
		return false
	}
	p.sample(now)
	return true
}

// sample takes one sample at now; p.mu is held.
func (p *Page) sample(now time.Time) {
	p.last = now
	p.times[p.head] = now.UnixMilli()
	for _, g := range p.guards {
		p.scratch.list = p.scratch.list[:0]
		g.read(&p.scratch)
		for _, s := range g.series {
			s.vals[p.head] = math.NaN()
		}
		for _, r := range p.scratch.list {
			g.seriesOf(r, p.history).vals[p.head] = r.v
		}
	}
	p.head = (p.head + 1) % p.history
	if p.count < p.history {
		p.count++
	}
}

// seriesOf returns g's series for r, made (with no history) the first time r's name is read.
func (g *guard) seriesOf(r reading, n int) *series {
	for _, s := range g.series {
		if s.name == r.name {
			return s
		}
	}
	s := &series{name: r.name, unit: r.unit, counter: r.counter, vals: make([]float64, n)}
	for i := range s.vals {
		s.vals[i] = math.NaN()
	}
	g.series = append(g.series, s)
	return s
}

// Run samples every Every until ctx is done, and returns ctx's error: run it on a goroutine of
// your own to keep history while nobody watches. Sampling stops when Run returns.
func (p *Page) Run(ctx context.Context) error {
	t := time.NewTicker(p.every)
	defer t.Stop()
	p.Sample()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			p.Sample()
		}
	}
}

// ServeHTTP serves the page, or its JSON form when the query has format=json or the path ends in
// ".json"; either samples first if a sample is due. Methods other than GET and HEAD are answered
// 405.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p.Sample()
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("format") == "json" || strings.HasSuffix(r.URL.Path, ".json") {
		h.Set("Content-Type", "application/json")
		b := p.JSON()
		if r.Method == http.MethodGet {
			w.Write(b)
		}
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Everything the page needs is inline: nothing may load from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'")
	if r.Method == http.MethodGet {
		w.Write(pageHTML)
	}
}

// Readings collects a guard's readings at one sample: what the read function given to
// [Page.Add] reports through.
type Readings struct {
	list []reading
}

type reading struct {
	name, unit string
	counter    bool
	v          float64
}

// Gauge reports a value that goes up and down (a limit, calls in flight, a latency), in unit
// ("calls", "ms", "%", or "" for a plain number). The page charts the value. A NaN or infinite
// value is charted as a gap. A name reported twice in one sample keeps the last value.
func (r *Readings) Gauge(name, unit string, v float64) { r.put(name, unit, false, v) }

// Counter reports a count since some origin that only grows (calls refused since the guard was
// built), in unit per second ("calls/s"). The page charts its rate per second between samples
// and shows the total; a count that goes down is read as a restart (no rate for that step).
func (r *Readings) Counter(name, unit string, total float64) { r.put(name, unit, true, total) }

func (r *Readings) put(name, unit string, counter bool, v float64) {
	if math.IsInf(v, 0) {
		v = math.NaN()
	}
	for i := range r.list {
		if r.list[i].name == name {
			r.list[i] = reading{name, unit, counter, v}
			return
		}
	}
	r.list = append(r.list, reading{name, unit, counter, v})
}

var nan = math.NaN()

// isNil reports whether v is nil or an interface holding a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
