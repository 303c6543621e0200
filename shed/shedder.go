package shed

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/swin"
	"github.com/wardgo/ward/internal/tally"
)

// ErrOverloaded is a shedder's refusal: allocation-free, matched with errors.Is, and matching
// ward.ErrRefused too. It carries no wait: a shedder does not know when a call will finish.
var ErrOverloaded = contract.Refusal("shed: server overloaded")

// Shedder is the adaptive shedder of [Core], safe for any number of goroutines: it refuses a
// call only when the server is both hot (CPU) and full (calls in flight over what the window shows
// it can carry).
//
// The count in flight is kept per P (an admission counts one in its P's row, a settle counts one
// in its own, and a reader sums admissions minus settles), so a call writes no shared cache line. The count is
// exact: no update is lost, in any build, even when GOMAXPROCS changes while calls are in flight
// (the rows grow with it; a container runtime changes GOMAXPROCS when the CPU limit changes). Its moving average
// moves by compare-and-set as timed calls settle;
// passes and response times go into a per-P striped window ([atomicwindow.Striped]); the capacity
// folded from the window is cached and refreshed at most once per refresh interval (a quarter of a
// bucket, [WithRefresh]), and only while the server is hot, since a cool server never needs it.
// The CPU reading is an atomic load of the sampler's latest moving average.
//
// Time: like the adaptive limiter, a Shedder times one admitted call in every [DefaultSampleEvery]
// (two clock reads) and settles the rest without a clock: every pass counts toward the busiest
// bucket, and the timed ones give the response times and move the average of calls in flight, by
// Beta to the power DefaultSampleEvery so that it keeps the preset's memory in calls. Untimed
// passes and Allow use the latest clock reading a timed call made. A refusal reads the clock only
// when it finds that reading moved since its P's previous refusal, and on every 8th refusal its P
// makes (the 1st, 9th, 17th, …), and decides again when the clock has moved by the granularity (a
// millisecond, or a quarter bucket if less) or more: calls seconds apart each see the time, so a
// cool-down ends on time however rarely calls come; after a burst, at most 7 refusals on a P
// decide on the instant the burst ended with; a flood of refusals costs a clock read once in
// eight, and one more on each P each time a read finds time moved. With [WithRefresh](0) and
// [WithSampleEvery](1), Allow reads the clock on every call and refreshes on every call that
// finds the server hot, and a Shedder driven from one goroutine gives exactly the decisions of a
// [Core] fed the same instants and CPU readings.
//
// What a concurrent reader may observe: a pass being written while capacity is folded may be left
// out of that fold; the cached capacity may be one refresh interval stale; Snapshot's fields are
// read one by one. A Shedder must not be copied after first use. The zero value is not usable:
// build one with [New]; [Shedder.Stop] ends the CPU sampler it started, if any.
type Shedder struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte // keep the average off whatever precedes the shedder in memory
	shedderAvg
	_ [avgPad]byte
	shedderShared
	_ [sharedPad]byte
	shedderCold
	_ [coldPad]byte
}

// shedderAvg is moved by every timed settle: a line of its own.
type shedderAvg struct {
	avg atomic.Uint64 // float64 bits, moved by CAS as timed calls settle
}

// shedderShared is read by every Allow and written rarely.
type shedderShared struct {
	capacity   atomic.Uint64 // cached, float64 bits
	next       atomic.Int64  // when the cache is due a refresh
	seen       clock.Coarse  // the latest clock reading
	hotAt      atomic.Int64  // the last instant the CPU was at or over the threshold; never if it was not
	marks      atomic.Uint32 // markDropped, markTold: one word, so a cool Allow tests both in one load
	refreshing atomic.Int32
	memPass    atomic.Int64  // the remembered busiest bucket (see Policy.Memory), for readers
	memRT      atomic.Uint64 // the remembered fastest bucket mean, float64 bits, for readers
}

// shedderCold is set at construction and only read after (the per-P tables inside are written
// row by row, each row on lines of its own).
type shedderCold struct {
	p        Policy
	win      *swin.Window // atomicwindow.Striped's window, so that a pass counts in the pin that takes it out of flight
	clock    func() int64
	cpu      func() int
	own      func(error) bool // WithOwnError
	fail     func(error) bool // WithFailure
	sampler  *CPU             // the sampler New started, if it did
	poll     *CPU             // the sampler, when it reads the shedder's clock: calls that read the clock take its readings when due
	untimed  int64            // WithSampleEvery's n − 1: an admission whose count on its P has these bits set is not timed
	beta     float64          // Policy.Beta to the power WithSampleEvery's n: the average moves on timed settles only
	refresh  int64
	gran     int64
	inFlight flight
	refused  clock.Refusals
	mono     tally.Mono    // keeps Counts' Refused monotonic (a refusal decided again is taken back)
	mem      memory        // written only by the goroutine holding refreshing
	buckets  []swin.Bucket // the fold's copy of the window, Policy.Buckets long: used only by the goroutine holding refreshing
	events   func(Event)
}

// The pads round each group up to whole cache lines, sized from the group itself. The last pad is
// never empty: a zero-size last field would make the compiler pad the struct past its last line.
const (
	avgPad    = (stripe.CacheLine - unsafe.Sizeof(shedderAvg{})%stripe.CacheLine) % stripe.CacheLine
	sharedPad = (stripe.CacheLine - unsafe.Sizeof(shedderShared{})%stripe.CacheLine) % stripe.CacheLine
	coldPad   = stripe.CacheLine - unsafe.Sizeof(shedderCold{})%stripe.CacheLine
)

// DefaultSampleEvery is how many admitted calls share one timed call by default.
const DefaultSampleEvery = 8

// Option configures a [Shedder]. A nil Option is an error.
type Option func(*config) error

type config struct {
	policy  Policy
	clock   func() int64
	cpu     func() int
	own     func(error) bool
	fail    func(error) bool
	every   int
	refresh time.Duration
	set     bool
	events  func(Event)
}

// Event says that a shedder turned hot or cooled. Turning hot is told by the fold that refreshes
// the cached capacity (which runs only while the server is hot); cooling by the first call that
// finds the server cool after that. No other call pays for it.
type Event struct {
	At       int64   // nanoseconds of the shedder's clock
	Hot      bool    // true: turned hot; false: cooled
	CPU      int     // the CPU reading, thousandths (-1: unknown)
	Capacity float64 // the capacity the window shows at At, before the CPU scaling
}

// WithEvents calls fn when the shedder turns hot and when it cools. fn runs on the goroutine of
// the call that noticed: keep it short (count, log with log/slog, set a gauge) and do not block in
// it. A nil fn is an error.
func WithEvents(fn func(Event)) Option {
	return func(c *config) error { return contract.Hook(ErrInvalid, "WithEvents", &c.events, fn) }
}

// WithPolicy sets the policy (default [DefaultPolicy]). An invalid policy is an error when the
// option is applied, naming the field (Policy.Validate).
func WithPolicy(p Policy) Option {
	return func(c *config) error {
		if err := p.Validate(); err != nil {
			return err
		}
		c.policy = p
		return nil
	}
}

// WithClock replaces the clock: nanoseconds from any monotonic origin (default: ward's monotonic
// clock). [Shedder.Now] reads it. A nil clock is an error.
func WithClock(now func() int64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithClock", &c.clock, now) }
}

// WithCPU replaces the CPU reading: thousandths of what the process may use, a negative value
// meaning unknown (never hot). Pass a shared [CPU]'s Read to let many shedders share one sampler,
// or your own metric. Without it, New makes a [CPU] sampler, started on the first Allow.
func WithCPU(read func() int) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithCPU", &c.cpu, read) }
}

// WithOwnError says which errors of fn, in [Shedder.Do], are the caller's own (a not found, a
// validation error): the server did the work, so they settle as a pass and their response time
// counts toward capacity. A nil predicate is an error.
func WithOwnError(own func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithOwnError", &c.own, own) }
}

// WithFailure says which errors of fn, in [Shedder.Do], are overloads besides
// context.DeadlineExceeded: an error it accepts settles as a failure even if [WithOwnError]
// accepts it too. A nil predicate is an error.
func WithFailure(fail func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithFailure", &c.fail, fail) }
}

// WithSampleEvery times one admitted call in every n (a power of two in [1, 1024]).
func WithSampleEvery(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1024 || n&(n-1) != 0 {
			return contract.Field(ErrInvalid, "WithSampleEvery", n, "a power of two in [1, 1024]")
		}
		c.every = n
		return nil
	}
}

// WithRefresh sets how often the cached capacity is folded afresh while the server is hot; the
// default is a quarter of a bucket (25 ms with the preset). Zero makes every call the hot rule
// decides read the clock, and refresh when it finds the server hot (unless another goroutine is
// refreshing at that moment), and times calls from the clock itself: exact, and slower. A call
// that finds the server cool with nothing to store (a cool CPU reading, no refusal since the
// server was last found cool, no cooling to tell) reads the clock only if it is timed.
func WithRefresh(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return contract.Field(ErrInvalid, "WithRefresh", d, ">= 0")
		}
		c.refresh, c.set = d, true
		return nil
	}
}

// New returns a shedder with an empty window.
func New(opts ...Option) (*Shedder, error) {
	c := config{policy: DefaultPolicy(), every: DefaultSampleEvery}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return nil, err
	}
	ownClock := c.clock == nil
	if ownClock {
		c.clock = clock.Now
	}
	if err := c.policy.Validate(); err != nil {
		return nil, err
	}
	width := int64(c.policy.Window) / int64(c.policy.Buckets)
	if !c.set {
		c.refresh = clock.Refresh(width)
	}
	now := c.clock()
	win := swin.New(c.policy.Buckets, width, fields, now) // the shape is valid: Validate checked it
	s := &Shedder{shedderCold: shedderCold{
		p:       c.policy,
		win:     win,
		clock:   c.clock,
		cpu:     c.cpu,
		own:     c.own,
		fail:    c.fail,
		untimed: int64(c.every - 1),
		refresh: int64(c.refresh),
		gran:    clock.Granularity(width),
		beta:    math.Pow(c.policy.Beta, float64(c.every)),
		events:  c.events,
		buckets: make([]swin.Bucket, c.policy.Buckets),
	}}
	s.inFlight.init()
	s.refused.Init()
	if s.cpu == nil {
		s.sampler = NewCPU()
		s.cpu = s.sampler.Read
		if ownClock {
			s.poll = s.sampler
		}
	}
	s.seen.Store(now)
	s.next.Store(now)
	s.hotAt.Store(never)
	s.mem = newMemory(now)
	s.memPass.Store(1)
	s.memRT.Store(math.Float64bits(math.Inf(1)))
	return s, nil
}

// Now returns the instant the shedder decides at, in nanoseconds of its clock: ward's monotonic
// clock, or the one given [WithClock].
func (s *Shedder) Now() int64 { return s.clock() }

// Stop ends the CPU sampler New started (none if WithCPU was given). The shedder still works; a
// later Allow starts the sampler again.
func (s *Shedder) Stop() {
	if s.sampler != nil {
		s.sampler.Stop()
	}
}

// Promise is a call the shedder let through. Settle it once with Pass, Fail or Ignore, through
// the variable Allow returned: the methods clear it, so settling it again is a no-op. The zero
// Promise is settled already.
type Promise struct {
	s     *Shedder
	start int64
	timed bool
}

// hot applies the hot rule ([Policy.heat]) at now, storing what it changes.
func (s *Shedder) hot(now int64, cpu int) bool {
	at, marks := s.hotAt.Load(), s.marks.Load()
	hot, moved := s.p.heat(now, cpu, at, marks&markDropped != 0)
	if moved != at {
		s.hotAt.Store(moved)
	}
	if !hot && marks != 0 && s.unmark(marks) {
		s.events(Event{At: now, Hot: false, CPU: cpu, Capacity: math.Float64frombits(s.capacity.Load())})
	}
	return hot
}

// unmark clears the marks a call that found the server cool saw, and only those: a refusal that
// marked the shedder dropped since then stays marked, and keeps it hot. It reports whether this
// call cleared markTold (set only with an events function), and so tells the cooling: one call
// does.
func (s *Shedder) unmark(seen uint32) bool {
	return s.marks.And(^seen)&seen&markTold != 0
}

// The marks: bits of Shedder.marks.
const (
	markDropped uint32 = 1 << iota // refused since the server was last found cool
	markTold                       // hot, as last told to WithEvents' function (set only with one)
)

// observe stores a clock reading: as the latest reading if it is one, or pulling the reading back
// to it if the clock jumped back.
func (s *Shedder) observe(now int64) {
	if !s.pullBack(now) {
		s.seen.Observe(now, s.gran)
	}
}

// pullBack reports whether now lies more than a window before the latest reading (the clock
// jumped back, or a far-future instant was read before), and if so pulls the reading and the
// refresh due back to now: without it, Allow would go on deciding at the far-future instant and
// the cache would never refresh.
func (s *Shedder) pullBack(now int64) bool {
	seen := s.seen.Load()
	if now >= seen || uint64(seen)-uint64(now) <= uint64(s.p.Window) {
		return false
	}
	s.seen.Store(now)
	s.next.Store(now)
	return true
}

// Allow asks to start one call. It returns a promise to settle once the call has finished, or
// [ErrOverloaded] when the server is hot and full. While the server is hot, a call it admits
// yields its P once (runtime.Gosched) before Allow returns, so that the goroutines already
// waiting for a P are decided, and refused in a few microseconds, before its work runs (see the
// package doc); a cool server's calls never yield.
func (s *Shedder) Allow() (Promise, error) {
	// The hot rule is skipped only when it can find the server nothing but cool and has nothing to
	// store: a cool reading, no refusal since the server was last found cool, no cooling to tell
	// WithEvents' function (the common case, decided here in two compares, each branched on).
	cpu := s.cpu()
	if cpu >= s.p.CPU {
		goto decide
	}
	if s.marks.Load() == 0 { // two branches, not one on the two compares' materialized result
		rows := s.inFlight.rows.Current() // enter, written out: no call but the pin's
		row := rows.Row(stripe.PinRow(rows))
		if row == nil { // GOMAXPROCS grew past the rows: Pin grows them
			stripe.Unpin()
			row = s.inFlight.rows.Pin()
		}
		w := (*[wWords]int64)(row)
		stripe.Add(&w[tally.Admitted], 1)
		tick := stripe.Load(&w[tally.Admitted])
		stripe.Unpin()
		if tick&s.untimed != 0 {
			return Promise{s: s}, nil
		}
		return s.timed(s.instant())
	}
decide:
	now := s.instant()
	v := s.decide(now, cpu, true)
	switch v {
	case vRefuse:
		return Promise{}, ErrOverloaded
	case vCool:
		if tick := s.inFlight.enter(); tick&s.untimed != 0 {
			return Promise{s: s}, nil
		}
		return s.timed(now)
	}
	return s.allowHot(now, cpu, v) // vHot, vRecheck
}

// instant is the instant a call is decided at: the latest reading, or the clock itself with
// WithRefresh(0).
func (s *Shedder) instant() int64 {
	if s.refresh == 0 {
		return s.clock()
	}
	return s.seen.Load()
}

// allowHot admits a call that found the server hot at now (verdict vHot), or finishes a refusal
// that decide counted and whose paced clock read is due (vRecheck): it reads the clock (see the
// type's doc) and, if time moved since the reading the refusal was decided on (or jumped far
// back) and a decision at the fresh instant admits the call, takes the refusal back, so that a
// cool-down ends and the capacity refreshes even when every call is refused. A call admitted
// enters flight, then yields its P once, so that the goroutines already waiting for a P decide
// first and find it in flight (see the package doc), and is timed, if it is, from when it runs
// again.
func (s *Shedder) allowHot(now int64, cpu int, v verdict) (Promise, error) {
	if v == vRecheck {
		if !s.redecide(now, cpu) {
			return Promise{}, ErrOverloaded
		}
		s.refused.Undo()
	}
	tick := s.inFlight.enter()
	runtime.Gosched()
	if tick&s.untimed != 0 {
		return Promise{s: s}, nil
	}
	if s.refresh == 0 { // now is the clock's reading from before the yield: read it again
		now = s.clock()
	}
	return s.timed(now)
}

// redecide reads the clock for a refusal decided at now and reports whether a decision at the
// fresh instant admits the call: only when time moved by the granularity or more (or jumped far
// back) and the decision at that instant finds the server not both hot and full.
func (s *Shedder) redecide(now int64, cpu int) bool {
	fresh := s.clock()
	if c := s.poll; c != nil && fresh >= c.due.Load() {
		c.poll(fresh)
	}
	moved := s.pullBack(fresh)
	if !moved {
		s.seen.Observe(fresh, s.gran)
		// Time that moved less than the granularity changes nothing the coarse reading
		// could not: deciding again would only write the shared words the decision touches,
		// which under a flood of refusals every core would fight over.
		moved = fresh-now >= s.gran
	}
	return moved && s.decide(fresh, cpu, false) != vRefuse
}

// timed returns the promise of a timed admission: its start is the clock's reading (now with
// WithRefresh(0)), which also takes the sampler's reading if one is due.
func (s *Shedder) timed(now int64) (Promise, error) {
	if s.refresh == 0 {
		return Promise{s: s, start: now, timed: true}, nil
	}
	start := s.clock()
	s.observe(start)
	if c := s.poll; c != nil && start >= c.due.Load() {
		c.poll(start)
	}
	return Promise{s: s, start: start, timed: true}, nil
}

// A verdict is what decide found: cool, hot but not full, or hot and full (refused); vRecheck is
// a refusal counted whose paced clock read is due.
type verdict uint8

const (
	vCool verdict = iota
	vHot
	vRefuse
	vRecheck
)

// decide decides a call at now: refused when hot and full. A refusal marks the shedder dropped,
// which keeps it hot through the cool-down. With count, decide also counts a refusal on the
// caller's P (clock.Refusals.Refuse, written out: no call but the pin's and Count's), so that a
// refusal makes one call from Allow, and answers vRecheck when the count asks for a paced clock
// read (never with WithRefresh(0), whose instant is the clock's own).
func (s *Shedder) decide(now int64, cpu int, count bool) verdict {
	if cpu >= s.p.CPU { // hot by the reading: the hot rule's first case, written out
		if s.hotAt.Load() != now {
			s.hotAt.Store(now)
		}
	} else if !s.hot(now, cpu) {
		return vCool
	}
	if s.refresh == 0 || now >= s.next.Load() {
		s.fold(now, cpu)
	}
	// Policy.full, written out so that the exact in-flight sum is taken only when the average
	// is over the limit
	limit := s.p.limit(math.Float64frombits(s.capacity.Load()), cpu)
	if !(math.Float64frombits(s.avg.Load()) > limit) || !(float64(s.inFlight.load()) > limit) {
		return vHot
	}
	if s.marks.Load()&markDropped == 0 {
		s.marks.Or(markDropped)
	}
	if !count {
		return vRefuse
	}
	rows := s.refused.Rows()
	if p := stripe.PinRow(rows); uint(p) < uint(rows.Len()) { // branch while pinned: no flag kept across the unpin
		if !clock.Count(rows.Row(p), now) {
			stripe.Unpin()
			return vRefuse
		}
		stripe.Unpin()
	} else {
		stripe.Unpin() // GOMAXPROCS grew past the rows: Refuse grows them
		if !s.refused.Refuse(now) {
			return vRefuse
		}
	}
	if s.refresh != 0 {
		return vRecheck
	}
	return vRefuse
}

// fold refreshes the cached capacity, and tells WithEvents' function the server turned hot if it
// has not yet; one goroutine at a time. It runs only while the server is hot.
func (s *Shedder) fold(now int64, cpu int) {
	if !s.refreshing.CompareAndSwap(0, 1) {
		return
	}
	defer s.refreshing.Store(0) // also if an events function panics
	sh := newShape()
	for _, b := range s.buckets[:s.win.Read(now, false, s.buckets)] { // shape's fold, without a call per bucket
		sh.add(atomicwindow.Bucket(b))
	}
	cap := s.p.capacity(sh, s.mem.value())
	s.p.fold(&s.mem, now, sh)
	m := s.mem.value()
	s.memPass.Store(m.maxPass)
	s.memRT.Store(math.Float64bits(m.minRT))
	s.capacity.Store(math.Float64bits(cap))
	s.next.Store(now + s.refresh)
	if s.events != nil && s.marks.Load()&markTold == 0 && s.marks.Or(markTold)&markTold == 0 {
		s.events(Event{At: now, Hot: true, CPU: cpu, Capacity: cap})
	}
}

// capacityAt folds the capacity at now without moving the memory.
func (s *Shedder) capacityAt(now int64) float64 {
	return s.p.capacity(s.shape(now), shape{maxPass: s.memPass.Load(), minRT: math.Float64frombits(s.memRT.Load())})
}

func (s *Shedder) shape(now int64) shape {
	sh := newShape()
	s.win.Each(now, false, func(b swin.Bucket) { sh.add(atomicwindow.Bucket(b)) })
	return sh
}

// leave takes a settled call out of flight, counting it with outcome word out; a timed one moves
// the average.
func (s *Shedder) leave(timed bool, out uintptr) {
	s.inFlight.exit(out)
	if timed {
		s.move()
	}
}

// move moves the average of calls in flight toward the count now: a timed call has settled.
func (s *Shedder) move() {
	n := float64(s.inFlight.load())
	for {
		old := s.avg.Load()
		avg := math.Float64frombits(old)*s.beta + n*(1-s.beta)
		if s.avg.CompareAndSwap(old, math.Float64bits(avg)) {
			return
		}
	}
}

// Pass settles a call that succeeded: it leaves flight and counts toward capacity.
func (p *Promise) Pass() {
	s := p.s
	if s == nil {
		return
	}
	p.s = nil
	if p.timed {
		s.passTimed(p.start)
		return
	}
	// out of flight, counted, and a pass in the window: one pinned section (Table.Pin and
	// AddCount's common case, the window's memo, written out: no call but the pin's)
	rows := s.inFlight.rows.Current()
	pi := stripe.PinRow(rows)
	now := s.seen.Load() // read after the pin: nothing to keep across its call
	if uint(pi) < uint(rows.Len()) {
		row := rows.Row(pi) // taken before the window's atomic loads: no check after them
		if wrows, h := s.win.Rows(); uint(pi) < uint(wrows.Len()) && s.win.At(wrows.Row(pi), h, now) {
			stripe.Add(s.win.Counter(wrows.Row(pi), fPasses), 1)
			w := (*[wWords]int64)(row)
			stripe.Add(&w[tally.Passed], 1)
			stripe.Add(&w[wSettled], 1)
			stripe.Unpin()
			return
		}
	}
	stripe.Unpin()
	s.win.AddCount(now, fPasses, 1, &s.inFlight.rows, tally.Passed, wSettled)
}

// passTimed settles a timed pass that started at start: its response time joins the window, the
// histogram and the average. Out of Pass, so that the untimed pass keeps a small frame.
func (s *Shedder) passTimed(start int64) {
	now := s.clock()
	d := max(now-start, 0)
	b := swin.Bucket{fPasses: 1, fRTSum: d, fRTCount: 1}
	// out of flight, counted, timed and in the window: one pinned section
	rows := s.inFlight.rows.Current()
	pi := stripe.PinRow(rows)
	if row := rows.Row(pi); row != nil && s.win.AddAllPinned(pi, now, &b) {
		tally.AddRow(row, tally.Passed)
		tally.AddRow(row, wSettled)
		tally.ObserveRow(row, wLatency, d)
		stripe.Unpin()
	} else {
		stripe.Unpin()
		s.inFlight.exitTimed(d)
		s.win.AddAll(now, b)
	}
	s.move() // after the exit: the average moves toward the count without this call
	s.observe(now)
}

// Fail settles a call that failed or overloaded: it leaves flight (a timed call moves the average
// of calls in flight) and says nothing about capacity.
func (p *Promise) Fail() {
	if s := p.s; s != nil {
		p.s = nil
		s.leave(p.timed, tally.Failed)
	}
}

// Ignore settles a call neutrally (the caller gave up, or the error was the caller's own and
// WithOwnError is not used): it leaves flight and records nothing, neither a response time nor a
// move of the average of calls in flight.
func (p *Promise) Ignore() {
	if s := p.s; s != nil {
		p.s = nil
		s.inFlight.exit(tally.Ignored)
	}
}

// Do runs fn if the shedder admits it, settles the call by fn's error and returns that error
// unchanged. A refusal returns [ErrOverloaded] without calling fn.
//
// fn's error settles as ward's one classification says ([contract.Classify]): nil passes; the
// caller's own cancellation (context.Canceled while ctx is done) is ignored; context.
// DeadlineExceeded and errors [WithFailure] accepts fail; errors [WithOwnError] accepts pass (the
// server did the work: its response time counts toward capacity); any other error fails, as
// [Promise.Fail] does (it leaves flight and says nothing about capacity). A panicking fn settles
// as a failure and the panic continues. A ctx already done returns its error (context.Canceled or
// context.DeadlineExceeded) and neither enters flight nor records anything.
func (s *Shedder) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	p, err := s.Allow()
	if err != nil {
		return err
	}
	defer p.Fail() // a no-op once settled; a failure if fn panics
	err = fn(ctx)
	contract.Settle(contract.Classify(ctx, err, s.own, s.fail, contract.Pass, contract.Fail), p.Pass, p.Fail, p.Ignore)
	return err
}

// Snapshot is a shedder's state for dashboards.
type Snapshot struct {
	InFlight int64   // calls in flight
	Average  float64 // the moving average of calls in flight
	Capacity float64 // calls in flight the window shows the server can carry, before CPU scaling
	CPU      int     // the latest CPU reading, thousandths (-1: unknown)
	Hot      bool    // whether a call now would find the server hot
	Refused  int64   // calls refused since New
}

// Snapshot folds the window afresh and reads the rest one field at a time. It does not start the
// CPU sampler's goroutine if nothing else has.
func (s *Shedder) Snapshot() Snapshot {
	now := s.clock()
	cpu := -1
	if s.sampler == nil || s.sampler.state.Load() == 1 {
		cpu = s.cpu()
	}
	hot, _ := s.p.heat(now, cpu, s.hotAt.Load(), s.marks.Load()&markDropped != 0)
	return Snapshot{
		InFlight: s.inFlight.load(),
		Average:  math.Float64frombits(s.avg.Load()),
		Capacity: s.capacityAt(now),
		CPU:      cpu,
		Hot:      hot,
		Refused:  s.refused.Load(),
	}
}

// Counts returns the shedder's counts since New ([ward.Counts]): calls admitted (Allow, Admit,
// Do) and refused, and the admitted calls settled by outcome. They sit in the per-P rows that
// already keep the calls in flight, so keeping them costs a call a plain add on a line its P
// already writes; Counts folds the rows. The calls in flight are Admitted − Passed − Failed −
// Ignored once no call is entering or leaving. A ctx already done (Do, Admit) is not counted.
func (s *Shedder) Counts() ward.Counts {
	c := tally.CountsOf(s.inFlight.rows.All(), 0)
	c.Refused = s.mono.Of(tally.Pos(s.refused.Load()))
	return c
}

// Latency returns the histogram of the response times of the timed passes since New ([ward.Latency]):
// one admitted call in every [WithSampleEvery] is timed (every call with 1), and a timed call
// that passes gives its response time, the one that counts toward capacity. A failed or ignored
// call is not timed: the shedder reads no clock when it settles one. The histogram is kept in the
// per-P rows, as Counts are.
func (s *Shedder) Latency() ward.Latency { return tally.LatencyOf(s.inFlight.rows.All(), wLatency) }

// flight is the count of calls in flight kept per P, with the shedder's counts ([ward.Counts]) and
// the histogram of its timed passes ([ward.Latency]) in the same rows: a P's row holds tally's
// count words from word 0 (admissions and settles by outcome made on that P), then the settles
// of every outcome together (wSettled), then the histogram (wLatency). The calls in flight are the
// admissions minus the settles summed over the rows (a P's share is negative when calls settle on
// another P than they started on), and a P's admissions pick the calls to time. Each P writes only
// its own row, and the rows grow with GOMAXPROCS, so the sums lose no update (see stripe.Table).
type flight struct{ rows stripe.Table }

// The words of a flight row after tally's count words.
const (
	wSettled = tally.Words                   // settles of every outcome
	wLatency = wSettled + 1                  // the histogram of the timed passes
	wWords   = wLatency + tally.LatencyWords // words in a row
)

func (f *flight) init() { f.rows.Init(wWords) }

// pin pins the calling goroutine to its P and returns the P's row (Table.Pin, written out: no
// call on the common path). Call stripe.Unpin after.
func (f *flight) pin() unsafe.Pointer {
	r := f.rows.Current()
	if row := r.Row(stripe.PinRow(r)); row != nil {
		return row
	}
	stripe.Unpin() // GOMAXPROCS grew past the rows: Pin grows them
	return f.rows.Pin()
}

// enter counts an admission and returns the count of admissions on the caller's P.
func (f *flight) enter() int64 {
	w := (*[wWords]int64)(f.pin())
	stripe.Add(&w[tally.Admitted], 1)
	tick := stripe.Load(&w[tally.Admitted])
	stripe.Unpin()
	return tick
}

// exit counts a settle with outcome word out (tally.Passed, Failed or Ignored).
func (f *flight) exit(out uintptr) {
	row := f.pin()
	tally.AddRow(row, out)
	tally.AddRow(row, wSettled)
	stripe.Unpin()
}

// exitTimed counts a timed pass of d nanoseconds, its response time in the histogram.
func (f *flight) exitTimed(d int64) {
	row := f.pin()
	tally.AddRow(row, tally.Passed)
	tally.AddRow(row, wSettled)
	tally.ObserveRow(row, wLatency, d)
	stripe.Unpin()
}

// load sums the Ps' counts: exact when no call is entering or leaving at the time.
func (f *flight) load() int64 {
	var n int64
	for r := f.rows.Current(); r != nil; r = r.Prev() { // All's rows, without its closure
		for p := range r.Len() {
			w := (*[wWords]int64)(r.Row(p))
			n += stripe.Load(&w[tally.Admitted]) - stripe.Load(&w[wSettled])
		}
	}
	return n
}
