package wardredis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wardgo/ward"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/rate"
)

// ErrInvalid is matched by every configuration error of this package, and by ward.ErrInvalid;
// the message names the field.
var ErrInvalid = ward.Invalid("wardredis: invalid configuration")

// ErrUnavailable is the refusal of Do when the store could not decide and the failure policy is
// [FailClosed]: it matches ward.ErrRefused and carries no wait. [Limiter.Take] returns the cause.
var ErrUnavailable = ward.Refusal("wardredis: quota store unavailable")

// ErrGarbage is matched by the error of a call on a key that holds something other than this
// limiter's state: another type, or fields that are not numbers. The key is named in the message.
// Only the script's own answer about the key is garbage: every other error reply of the server
// (OOM, BUSY, READONLY, CLUSTERDOWN, MASTERDOWN, LOADING, ...) is a store failure.
var ErrGarbage = errors.New("wardredis: key holds no ward state")

// errBroken is the cause Take returns when the breaker refused to ask the store: one value, so
// that a dead server costs no allocation.
var errBroken = fmt.Errorf("wardredis: store not asked: %w", breaker.ErrUnavailable)

// Failure is what a call gets when the store cannot decide: Redis down, slow past the context,
// refusing, or the breaker in front of it open.
type Failure uint8

const (
	// FailClosed refuses the call (Do returns [ErrUnavailable]): the quota is never exceeded, and
	// nothing passes while the store is away. The default.
	FailClosed Failure = iota
	// FailOpen admits the call: nothing is refused while the store is away, and nothing is
	// limited either.
	FailOpen
	// Fallback decides the call on a local rate.BucketLimiter per key at a share of the quota
	// ([WithFallback]): each process keeps to its share while the store is away.
	Fallback
)

func (f Failure) String() string {
	switch f {
	case FailClosed:
		return "FailClosed"
	case FailOpen:
		return "FailOpen"
	}
	return "Fallback"
}

// Source says who decided a call: [Decision.By].
type Source uint8

const (
	// Store: the script on the server decided.
	Store Source = iota
	// Lease: a token this process had leased from the store, or a refusal of the store that
	// still stands (leasing on).
	Lease
	// Failed: the store could not decide; the failure policy did (Decision.Policy says which).
	Failed
)

func (s Source) String() string {
	switch s {
	case Store:
		return "Store"
	case Lease:
		return "Lease"
	}
	return "Failed"
}

// Decision is the answer to one call.
type Decision struct {
	// OK is whether the call was admitted.
	OK bool
	// Wait is, when refused by the quota, how long until the call would pass (rate.Forever when it
	// never will: more than the burst or the quota); 0 when admitted or when unknown.
	Wait time.Duration
	// By is who decided.
	By Source
	// Policy is the failure policy that decided, when By is Failed.
	Policy Failure
	// Start is the start of the open period (a period limiter, decided by the store or a lease),
	// in nanoseconds of the limiter's clock; 0 otherwise.
	Start int64

	granted int           // tokens the store granted (a lease may get several)
	reset   time.Duration // until the open period ends, from the store's instant
}

// Stats counts outcomes since the limiter was made, one counter per kind.
type Stats struct {
	Granted    uint64 // admitted by the store
	Limited    uint64 // refused by the store: over the quota
	Leased     uint64 // admitted from a local lease, without a round trip
	Held       uint64 // refused locally, without a round trip, while the store's last refusal stands
	RoundTrips uint64 // script calls sent to the server
	Errors     uint64 // calls the store failed: network, timeout, a server refusing
	Garbage    uint64 // calls on a key holding something else ([ErrGarbage])
	Broken     uint64 // calls the breaker kept from the store (it is open)
	Opened     uint64 // admitted by FailOpen
	Closed     uint64 // refused by FailClosed
	FellBack   uint64 // admitted by the local fallback
	FellShort  uint64 // refused by the local fallback
}

type counters struct {
	granted, limited, leased, held, trips, errs, garbage, broken, opened, closed, fellBack, fellShort atomic.Uint64
}

// Option configures a [Limiter].
type Option func(*config) error

type config struct {
	clock    func() int64
	timeout  time.Duration
	failure  Failure
	share    float64
	leaseMax int
	life     time.Duration
	brk      *breaker.Breaker
	keep     time.Duration
	keys     int
}

// WithClock makes the limiter decide at the instants of now (nanoseconds; every process sharing
// the quota must read the same clock, a Unix time for instance) instead of the server's TIME.
// Leases expire, and the fallback's buckets refill, on this clock too. For tests, and for fleets that trust their own clocks more
// than the server's. A nil clock is an error.
func WithClock(now func() int64) Option {
	return func(c *config) error {
		if now == nil {
			return ward.Field(ErrInvalid, "WithClock", "nil", "a function")
		}
		c.clock = now
		return nil
	}
}

// WithTimeout bounds the store's share of every call: a round trip (and a reload of the script)
// runs until the context's deadline or this timeout, whichever comes first: 100 ms unless told.
// A dead or hung server then costs a call this long at most, whatever deadline the caller
// brings, until the breaker opens. Must be positive.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return ward.Field(ErrInvalid, "WithTimeout", d, "> 0")
		}
		c.timeout = d
		return nil
	}
}

// WithFailOpen admits every call the store cannot decide.
func WithFailOpen() Option {
	return func(c *config) error { c.failure = FailOpen; return nil }
}

// WithFailClosed refuses every call the store cannot decide: the default.
func WithFailClosed() Option {
	return func(c *config) error { c.failure = FailClosed; return nil }
}

// WithFallback decides the calls the store cannot on a local rate.BucketLimiter per key, at
// share of the quota: a bucket of share × rate and share × burst tokens (at least one), or for a
// period share × quota / period a second with a burst of share × quota (at least one). With n
// processes, a share of 1/n keeps the fleet near its quota while the store is away. share must
// lie in (0, 1].
func WithFallback(share float64) Option {
	return func(c *config) error {
		if !(share > 0 && share <= 1) {
			return ward.Field(ErrInvalid, "WithFallback", share, "in (0, 1]")
		}
		c.failure, c.share = Fallback, share
		return nil
	}
}

// WithLease turns leasing on: a call of one token that finds no token leased locally asks the
// store for several at once (at most max, and never more than the burst or the quota), takes
// one and keeps the rest for later calls of this process, for at most life (and, for a period,
// never past the period's end). The number asked for follows the local rate: what the last lease
// handed out, scaled to a lifetime. Tokens unused when their lease expires are lost, never given
// twice. max must be at least 1 and at most the burst or quota; life must be positive.
func WithLease(max int, life time.Duration) Option {
	return func(c *config) error {
		if max < 1 {
			return ward.Field(ErrInvalid, "WithLease max", max, ">= 1")
		}
		if life <= 0 {
			return ward.Field(ErrInvalid, "WithLease life", life, "> 0")
		}
		c.leaseMax, c.life = max, life
		return nil
	}
}

// WithBreaker puts b in front of the store instead of a breaker.New() with its default policy.
// A nil breaker is an error.
func WithBreaker(b *breaker.Breaker) Option {
	return func(c *config) error {
		if b == nil {
			return ward.Field(ErrInvalid, "WithBreaker", "nil", "a *breaker.Breaker")
		}
		c.brk = b
		return nil
	}
}

// WithKeep is how long a key outlives the instant it stops mattering (a bucket full again, a
// period over): 1 s unless told, so that a call a moment late, or a clock a moment behind,
// still finds it. At least 1 ms.
func WithKeep(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return ward.Field(ErrInvalid, "WithKeep", d, ">= 1ms")
		}
		c.keep = d
		return nil
	}
}

// WithKeys bounds how many keys the limiter keeps local state for (leases, fallback
// limiters): 10,000 unless told. Must be positive.
func WithKeys(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return ward.Field(ErrInvalid, "WithKeys", n, ">= 1")
		}
		c.keys = n
		return nil
	}
}

type kind uint8

const (
	kindBucket kind = iota
	kindPeriod
	kindSliding
)

// Limiter is a quota shared by every process that builds one with the same client, prefix and
// policy: a token bucket ([NewBucket]) or a fixed period ([NewPeriod]) per key, kept in Redis and
// decided there by one script per call. See the package doc for the consistency promise, the
// lease bound and the failure policies.
//
// A Limiter is safe for concurrent use and must not be copied. A call that leasing answers
// locally takes a mutex of its key and allocates nothing; a round trip costs what go-redis costs
// (a few allocations) plus the script.
type Limiter struct {
	_      noCopy
	client redis.UniversalClient
	sha    any // the script's SHA-1, for EVALSHA (boxed once)
	src    any // the script, for EVAL when the server has lost it
	prefix string
	kind   kind
	most   int   // the most tokens one call may take: the burst or the quota
	args   []any // the policy's script arguments, after op, now and n, boxed once
	cfg    config
	brk    *breaker.Breaker
	nodes  *nodeBreakers // a breaker per master of a Cluster; nil otherwise
	local  func() int64  // the clock leases expire on
	offset atomic.Int64  // server time minus local time, in ns (server-clock mode)
	fb     func() (*rate.BucketLimiter, error)
	keys   table
	n      counters
}

type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// MaxInstant is the largest instant, in nanoseconds from its clock's origin either way, that a
// Limiter decides at: 2^53 microseconds (about 285 years), the most a Lua number counts exactly.
const MaxInstant = (1<<53 - 1) * int64(time.Microsecond)

// maxRefill is the longest a bucket may take to refill from empty, in seconds: MaxInstant.
const maxRefill = float64(MaxInstant) / 1e9

// NewBucket returns a token bucket per key: perSecond tokens a second, at most burst held, each key
// starting full; the key of k is prefix+k. It decides exactly as rate.Bucket.Step does for the same
// instants, counted in whole microseconds. perSecond must be positive and finite (a key that never
// refills would never expire), burst in [1, 2^53], and the bucket must refill from empty within
// MaxInstant (burst/perSecond at most 2^53 µs, about 285 years), so that a key's expiry is a
// time the server can keep.
func NewBucket(c redis.UniversalClient, prefix string, perSecond float64, burst int, opts ...Option) (*Limiter, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 0) {
		return nil, ward.Field(ErrInvalid, "rate", perSecond, "finite and > 0")
	}
	if burst < 1 || burst > 1<<53 {
		return nil, ward.Field(ErrInvalid, "burst", burst, "in [1, 2^53]")
	}
	if !(float64(burst)/perSecond <= maxRefill) {
		return nil, ward.Field(ErrInvalid, "rate", perSecond, "at least burst/2^53µs (a bucket refills within MaxInstant)")
	}
	l, err := newLimiter(c, prefix, kindBucket, burst, opts)
	if err != nil {
		return nil, err
	}
	l.setScript(bucketSrc, strconv.FormatFloat(perSecond, 'g', -1, 64), strconv.Itoa(burst), ms(l.cfg.keep))
	l.fb = func() (*rate.BucketLimiter, error) {
		return l.newFallback(perSecond*l.cfg.share, float64(burst)*l.cfg.share)
	}
	return l.checkFallback()
}

// NewPeriod returns a fixed-period counter per key: at most quota calls per period, as
// rate.Period counts them (refused calls are not counted; with align, periods start on
// multiples of the period on the limiter's clock, which is the Unix time unless WithClock says
// otherwise). quota must be positive; period a positive whole number of microseconds, at most
// 2^53 of them.
func NewPeriod(c redis.UniversalClient, prefix string, quota int, period time.Duration, align bool, opts ...Option) (*Limiter, error) {
	if quota < 1 || quota > 1<<53 {
		return nil, ward.Field(ErrInvalid, "quota", quota, "in [1, 2^53]")
	}
	if period < time.Microsecond || period%time.Microsecond != 0 || period > time.Duration(MaxInstant) {
		return nil, ward.Field(ErrInvalid, "period", period, "a whole number of microseconds in [1µs, 2^53µs]")
	}
	l, err := newLimiter(c, prefix, kindPeriod, quota, opts)
	if err != nil {
		return nil, err
	}
	a := "0"
	if align {
		a = "1"
	}
	l.setScript(periodSrc, strconv.Itoa(quota), strconv.FormatInt(int64(period/time.Microsecond), 10), a, ms(l.cfg.keep))
	l.fb = func() (*rate.BucketLimiter, error) {
		q := float64(quota) * l.cfg.share
		return l.newFallback(q/period.Seconds(), q)
	}
	return l.checkFallback()
}

// MaxSlidingQuota is the largest quota [NewSliding] takes: the server keeps a member of a sorted
// set per event in the window (about 100 bytes each), and a window pulled back after the clock
// jumped back is filled with quota of them in one script.
const MaxSlidingQuota = 1 << 16

// NewSliding returns an exact sliding window per key: at most quota calls in any window-long
// stretch, as rate.Sliding counts them, one stamp per admitted call kept in a sorted set on the
// server. Driven with instants in order it decides exactly as rate.Sliding does; an instant
// before the newest stamp (the server's clock stepped back a little) is judged and stamped at
// the newest stamp instead, so the window's promise holds whatever the clocks do. Leasing is not
// offered: a leased call happens after the instant it was stamped at, which the window cannot
// bound the way a bucket's refill does. quota must lie in [1, MaxSlidingQuota]; window must be
// a positive whole number of microseconds, at most 2^53 of them.
func NewSliding(c redis.UniversalClient, prefix string, quota int, window time.Duration, opts ...Option) (*Limiter, error) {
	if quota < 1 || quota > MaxSlidingQuota {
		return nil, ward.Field(ErrInvalid, "quota", quota, "in [1, 2^16]")
	}
	if window < time.Microsecond || window%time.Microsecond != 0 || window > time.Duration(MaxInstant) {
		return nil, ward.Field(ErrInvalid, "window", window, "a whole number of microseconds in [1µs, 2^53µs]")
	}
	l, err := newLimiter(c, prefix, kindSliding, quota, opts)
	if err != nil {
		return nil, err
	}
	if l.cfg.leaseMax > 0 {
		return nil, ward.Field(ErrInvalid, "WithLease", l.cfg.leaseMax, "no lease on a sliding window")
	}
	l.setScript(slidingSrc, strconv.Itoa(quota), strconv.FormatInt(int64(window/time.Microsecond), 10), ms(l.cfg.keep))
	l.fb = func() (*rate.BucketLimiter, error) {
		q := float64(quota) * l.cfg.share
		return l.newFallback(q/window.Seconds(), q)
	}
	return l.checkFallback()
}

// checkFallback makes one fallback limiter, so that a share too small for a BucketLimiter is an
// error now rather than a limiter missing when the store goes away.
func (l *Limiter) checkFallback() (*Limiter, error) {
	if l.cfg.failure == Fallback {
		if _, err := l.fb(); err != nil {
			return nil, ward.Field(ErrInvalid, "WithFallback", l.cfg.share, "a share giving a valid rate.BucketLimiter ("+err.Error()+")")
		}
	}
	return l, nil
}

func (l *Limiter) setScript(src string, args ...string) {
	l.sha, l.src = any(redis.NewScript(src).Hash()), any(src)
	for _, a := range args {
		l.args = append(l.args, a)
	}
}

func ms(d time.Duration) string { return strconv.FormatInt(int64(d/time.Millisecond), 10) }

// newFallback makes a key's local limiter, on the limiter's clock when WithClock gave one.
func (l *Limiter) newFallback(r, burst float64) (*rate.BucketLimiter, error) {
	if l.cfg.clock != nil {
		return rate.NewBucketLimiter(r, max(1, int(burst)), rate.WithClock(l.cfg.clock))
	}
	return rate.NewBucketLimiter(r, max(1, int(burst)))
}

func newLimiter(c redis.UniversalClient, prefix string, k kind, most int, opts []Option) (*Limiter, error) {
	if c == nil || reflect.ValueOf(c).Kind() == reflect.Pointer && reflect.ValueOf(c).IsNil() {
		return nil, ward.Field(ErrInvalid, "client", "nil", "a redis.UniversalClient")
	}
	if err := checkClient(c); err != nil {
		return nil, err
	}
	cfg := config{timeout: 100 * time.Millisecond, keep: time.Second, keys: 10_000}
	for i, o := range opts {
		if o == nil {
			return nil, ward.Field(ErrInvalid, fmt.Sprintf("option %d", i), "nil", "an Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.leaseMax > most {
		return nil, ward.Field(ErrInvalid, "WithLease max", cfg.leaseMax, fmt.Sprintf("<= %d (the burst or the quota)", most))
	}
	var nodes *nodeBreakers
	if cc, ok := c.(*redis.ClusterClient); ok && cfg.brk == nil {
		nodes = &nodeBreakers{cc: cc, m: map[*redis.Client]*breaker.Breaker{}}
	}
	if cfg.brk == nil {
		b, err := breaker.New()
		if err != nil {
			return nil, err
		}
		cfg.brk = b
	}
	l := &Limiter{client: c, prefix: prefix, kind: k, most: most, cfg: cfg, brk: cfg.brk, nodes: nodes, local: ward.Now}
	if cfg.clock != nil {
		l.local = cfg.clock
	}
	l.offset.Store(time.Now().UnixNano() - ward.Now())
	l.keys.init(cfg.keys)
	return l, nil
}

// bound returns ctx bounded by the store's share of a call, WithTimeout's.
func (l *Limiter) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > l.cfg.timeout {
		return context.WithTimeout(ctx, l.cfg.timeout)
	}
	return ctx, func() {}
}

// nodeBreakers keeps a breaker per master of a Cluster, made on first use, so that one dead
// master sheds its own keys' calls and no others.
type nodeBreakers struct {
	cc *redis.ClusterClient
	mu sync.Mutex
	m  map[*redis.Client]*breaker.Breaker
}

// of returns the breaker of the master that owns key's slot now, or def when the client cannot
// say which (no cluster state yet).
func (nb *nodeBreakers) of(ctx context.Context, key string, def *breaker.Breaker) *breaker.Breaker {
	node, err := nb.cc.MasterForKey(ctx, key)
	if err != nil {
		return def
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	b := nb.m[node]
	if b == nil {
		if b, err = breaker.New(); err != nil {
			return def
		}
		nb.m[node] = b
	}
	return b
}

// checkClient refuses a client that would let a call outlive its context: go-redis ignores a
// context's deadline on the socket unless ContextTimeoutEnabled is set, and waits ReadTimeout
// (3 s by default) instead. Clients of other types are taken as they are.
func checkClient(c redis.UniversalClient) error {
	var on bool
	switch c := c.(type) {
	case *redis.Client:
		on = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		on = c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		on = c.Options().ContextTimeoutEnabled
	default:
		return nil
	}
	if !on {
		return ward.Field(ErrInvalid, "client ContextTimeoutEnabled", false, "true (or a call may block past its context)")
	}
	return nil
}

// Now returns the instant the short forms decide at, in nanoseconds: the server's clock (Unix
// time, as the last reply said it, moved on by this process's monotonic clock since), or the
// WithClock clock.
func (l *Limiter) Now() int64 {
	if l.cfg.clock != nil {
		return l.cfg.clock()
	}
	return ward.Now() + l.offset.Load()
}

// Stats returns the counters.
func (l *Limiter) Stats() Stats {
	n := &l.n
	return Stats{
		Granted: n.granted.Load(), Limited: n.limited.Load(), Leased: n.leased.Load(), Held: n.held.Load(),
		RoundTrips: n.trips.Load(), Errors: n.errs.Load(), Garbage: n.garbage.Load(),
		Broken: n.broken.Load(), Opened: n.opened.Load(), Closed: n.closed.Load(),
		FellBack: n.fellBack.Load(), FellShort: n.fellShort.Load(),
	}
}

// Take asks for n tokens of key at the limiter's clock (the server's TIME, or WithClock's). A
// call for one token is answered from a lease when leasing is on. A non-nil error says why the
// store could not decide (wrapping the go-redis error, [ErrGarbage], or breaker.ErrUnavailable
// when the breaker kept the call from the store); the Decision is then the failure policy's.
func (l *Limiter) Take(ctx context.Context, key string, n int) (Decision, error) {
	return l.take(ctx, l.prefix, key, l.keys.get(l, key), n)
}

// TakeAt asks for n tokens of key at now, an instant of the limiter's clock (Unix nanoseconds
// for the server's clock), rounded down to a whole microsecond; leases are not used. Instants
// beyond [MaxInstant] either way are an error. Driven with the same instants, a bucket and a
// period decide exactly as rate.Bucket and rate.Period do.
func (l *Limiter) TakeAt(ctx context.Context, key string, now int64, n int) (Decision, error) {
	if now > MaxInstant || now < -MaxInstant {
		return Decision{}, ward.Field(ErrInvalid, "now", now, "within MaxInstant of the clock's origin")
	}
	return l.store(ctx, l.prefix, key, nil, opTake, micros(now), n, n)
}

func micros(now int64) string {
	us := now / 1000
	if now%1000 < 0 {
		us--
	}
	return strconv.FormatInt(us, 10)
}

// Allow takes one token of key at the limiter's clock, bounded by the timeout.
func (l *Limiter) Allow(key string) bool {
	d, _ := l.take(context.Background(), l.prefix, key, l.keys.get(l, key), 1)
	return d.OK
}

// Do runs fn if one token of key is granted and returns fn's error unchanged. Otherwise it
// returns, without calling fn, rate.ErrLimited with its wait (matching ward.ErrRefused;
// ward.RetryAfter reads the wait) when the quota refused, or [ErrUnavailable] when the store could
// not decide and the policy is FailClosed.
func (l *Limiter) Do(ctx context.Context, key string, fn func(context.Context) error) error {
	d, _ := l.take(ctx, l.prefix, key, l.keys.get(l, key), 1)
	return l.do(ctx, d, fn)
}

func (l *Limiter) do(ctx context.Context, d Decision, fn func(context.Context) error) error {
	if d.OK {
		return fn(ctx)
	}
	return l.refusal(d)
}

// refusal is the error Do returns for d: nil when admitted.
func (l *Limiter) refusal(d Decision) error {
	switch {
	case d.OK:
		return nil
	case d.By == Failed && d.Policy == FailClosed:
		return ErrUnavailable
	}
	return ward.WithWait(rate.ErrLimited, d.Wait)
}

// Release gives one token of key back (a period counts one call fewer, if its period is still
// open): what a rate.Chained does when a later link refuses. A token of a lease goes back to the
// lease.
func (l *Limiter) Release(ctx context.Context, key string) error {
	return l.release(ctx, l.prefix, key, l.keys.get(l, key))
}

func (l *Limiter) release(ctx context.Context, pre, key string, e *entry) error {
	if l.cfg.leaseMax > 0 && e.giveBack(l.local()) {
		return nil
	}
	_, err := l.store(ctx, pre, key, e, opRelease, l.instant(), 0, 0)
	return err
}

// The script's ops, boxed once: a string put in an interface value allocates.
var (
	opTake    any = "take"
	opLease   any = "lease"
	opRelease any = "release"
)

// take is Take on the Redis key pre+key with its entry (nil when the limiter keeps none); the
// two are joined only for a round trip, so that a lease's answer allocates nothing.
func (l *Limiter) take(ctx context.Context, pre, key string, e *entry, n int) (Decision, error) {
	if l.cfg.leaseMax == 0 || n != 1 {
		return l.store(ctx, pre, key, e, opTake, l.instant(), n, n)
	}
	sent := l.local()
	if d, ok := e.hand(sent); ok {
		if d.OK {
			l.n.leased.Add(1)
		} else {
			l.n.held.Add(1)
		}
		return d, nil
	}
	ask := e.ask(sent, l.cfg.life, l.cfg.leaseMax)
	d, err := l.store(ctx, pre, key, e, opLease, l.instant(), ask, 1)
	switch {
	case err != nil:
	case d.OK:
		e.fill(sent, d, l.cfg.life)
	default:
		e.refuse(sent, d)
	}
	return d, err
}

// instant is the now argument of the script: "" (the server reads TIME) or WithClock's instant.
func (l *Limiter) instant() string {
	if l.cfg.clock == nil {
		return ""
	}
	return micros(l.cfg.clock())
}

// store runs the script once, asking for n tokens, through the breaker; when it cannot, the
// failure policy decides the caller's own want tokens (a lease asks for more than its caller
// takes).
func (l *Limiter) store(ctx context.Context, pre, key string, e *entry, op any, now string, n, want int) (Decision, error) {
	rkey := pre + key
	brk := l.brk
	if l.nodes != nil { // finding the slot's owner may ask the cluster: bounded as a round trip
		var cancel context.CancelFunc
		ctx, cancel = l.bound(ctx)
		defer cancel()
		brk = l.nodes.of(ctx, rkey, brk)
	}
	p, err := brk.Allow()
	if err != nil {
		l.n.broken.Add(1)
		return l.fail(e, want, errBroken)
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	// EVALSHA sha 1 key op now n policy...: the command built here in one slice, where
	// Script.Run would build a slice of keys, a slice of arguments and a copy of both.
	args := make([]any, 0, 7+len(l.args))
	args = append(args, "evalsha", l.sha, "1", rkey, op, now, n)
	args = append(args, l.args...)
	l.n.trips.Add(1)
	sent := ward.Now()
	reply, err := l.client.Do(ctx, args...).Text()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") { // flushed, or a new server
		args[0], args[1] = "eval", l.src
		l.n.trips.Add(1)
		reply, err = l.client.Do(ctx, args...).Text()
	}
	if err != nil {
		switch {
		case redis.HasErrorPrefix(err, garbagePrefix): // the script read the key: the server is up, the key is wrong
			p.Pass()
			l.n.garbage.Add(1)
			return l.fail(e, want, fmt.Errorf("%w: %q: %w", ErrGarbage, rkey, err))
		case ctx.Err() != nil && errors.Is(err, context.Canceled):
			p.Ignore()
		default:
			p.Fail()
		}
		l.n.errs.Add(1)
		return l.fail(e, want, fmt.Errorf("wardredis: %q: %w", rkey, err))
	}
	p.Pass()
	d, serverUs, err := l.parse(reply)
	if err != nil {
		l.n.errs.Add(1)
		return l.fail(e, want, err)
	}
	if l.cfg.clock == nil {
		l.offset.Store(serverUs*1000 - sent)
	}
	if d.OK {
		l.n.granted.Add(1)
	} else {
		l.n.limited.Add(1)
	}
	return d, nil
}

// parse reads the script's reply: "ok granted wait now start reset", integers but for start,
// which is "-" when no period is open. It allocates nothing.
func (l *Limiter) parse(r string) (Decision, int64, error) {
	var f [6]int64
	rest := r
	for i := range f {
		var s string
		s, rest, _ = strings.Cut(rest, " ")
		if i == 4 && s == "-" {
			f[i] = math.MinInt64
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Decision{}, 0, fmt.Errorf("wardredis: unexpected script reply %q", r)
		}
		f[i] = v
	}
	d := Decision{OK: f[0] == 1, By: Store, Wait: time.Duration(f[2]), granted: int(f[1]), reset: time.Duration(f[5])}
	if f[2] < 0 {
		d.Wait = rate.Forever
	}
	if f[4] != math.MinInt64 {
		d.Start = f[4] * 1000
	}
	return d, f[3], nil
}

// fail answers a call the store could not decide, by the failure policy.
func (l *Limiter) fail(e *entry, n int, cause error) (Decision, error) {
	d := Decision{By: Failed, Policy: l.cfg.failure}
	switch l.cfg.failure {
	case FailOpen:
		d.OK = true
		l.n.opened.Add(1)
	case FailClosed:
		l.n.closed.Add(1)
	case Fallback:
		fb := e.fallback(l)
		d.OK, d.Wait = fb.TakeAt(fb.Now(), n)
		if d.OK {
			l.n.fellBack.Add(1)
		} else {
			l.n.fellShort.Add(1)
		}
	}
	return d, cause
}
