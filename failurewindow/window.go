package failurewindow

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/stripe"
)

// MaxStoredFailures is the most failure stamps a Window keeps, across all its keys. The bound is
// on failures, not keys: a key's memory grows with its failures, up to the limit the operator
// set, and every stored key holds at least one failure, so there are never more keys than this.
const MaxStoredFailures = 1 << 18

// MaxKeyLen is the longest key stored as it is. A longer key is replaced by a 128-bit digest
// (hash/maphash under two seeds drawn at New, so collisions cannot be aimed at); its failures
// count the same, and it costs no allocation to look up.
const MaxKeyLen = 128

// evictionProbes is how many keys, chosen uniformly at random, a failure with no room looks at
// for one below its limit to forget.
const evictionProbes = 8

// shards is how many independently locked parts the table has.
const shards = 256

// ErrInvalid is wrapped by every construction error.
var ErrInvalid = errors.New("failurewindow: invalid parameter")

// Window counts failures per key over a sliding window of time, in bounded memory, for any
// number of goroutines: has this key failed too often lately?
//
// [Window.Admit] judges a key by the failures already counted when the request enters and writes
// nothing; [Window.Record] counts a failure when it happens. Requests admitted concurrently below
// the limit may push a key's count past it, by no more than the number admitted at once: the
// count is of outcomes, and nobody knows an outcome before it happens.
//
// A failure is in the window while less than the window has passed since it; exactly a window
// later it is out. Per key only the stamps of its failures in the window are kept, ascending, at
// most limit of them: the limit-th newest decides admission and the wait. A key whose failures
// have all expired is indistinguishable from an absent one and is removed by a sweep, which runs
// in the recording goroutine when the table has doubled since the last sweep or a window has
// passed since it; no goroutine of the Window's own.
//
// At most [MaxStoredFailures] stamps are kept across all keys. A new failure with no room evicts
// a key below the limit, found by probing at most 8 keys chosen uniformly at random (rejection
// sampling over the shards; never map iteration order). A key at the limit is never evicted: a
// flood of fresh addresses cannot wash out the one guessing passwords. If every probed key is at
// the limit, the new failure is not counted, and [Snapshot].Uncounted says so.
//
// The table is 256 shards, each a mutex around a map: Admit hashes the key and holds one shard's
// lock for a lookup (no allocation, known key or not); Record also takes the shared stamp count by
// an atomic add when it stores a new stamp. A Window must not be copied after first use; build
// one with [New].
type Window struct {
	_ stripe.NoCopy

	limit  int
	window int64
	clock  func() int64
	max    int64 // MaxStoredFailures; lowered only by tests
	seed   maphash.Seed
	seed2  maphash.Seed

	stored    atomic.Int64 // stamps across all keys
	evictions atomic.Int64
	uncounted atomic.Int64
	maxLen    atomic.Int64 // a bound on any shard's key count, for rejection sampling
	sweeping  atomic.Bool
	lastSweep atomic.Int64
	swept     atomic.Int64 // stamps stored right after the last sweep

	shards [shards]shard
}

type shard struct {
	mu      sync.Mutex
	index   map[string]int32 // key → position in entries
	entries []entry          // dense, for uniform probing
	_       [stripe.CacheLine - 8 - 8 - 24]byte
}

// entry is one key's failures: a ring of stamps, ascending from head, n of them.
type entry struct {
	key  string
	ring []int64
	head int32
	n    int32
}

// Option configures a [Window].
type Option func(*Window) error

// WithClock replaces the clock: nanoseconds from any monotonic origin. Admit and Record read it;
// AdmitAt and RecordAt take the instant instead.
func WithClock(now func() int64) Option {
	return func(w *Window) error {
		if now == nil {
			return fmt.Errorf("%w: WithClock(nil)", ErrInvalid)
		}
		w.clock = now
		return nil
	}
}

// New returns an empty window admitting a key while it has fewer than limit failures within
// window. An unset (zero) or negative parameter is an error, never a silent default: zero would
// mean "no limit", and a value the constructor made up is invisible to whoever reviews the
// configuration. A limit above [MaxStoredFailures] is an error too: no key could ever reach it.
func New(limit int, window time.Duration, opts ...Option) (*Window, error) {
	switch {
	case limit <= 0:
		return nil, fmt.Errorf("%w: limit = %d, want > 0", ErrInvalid, limit)
	case limit > MaxStoredFailures:
		return nil, fmt.Errorf("%w: limit = %d, want <= MaxStoredFailures (%d)", ErrInvalid, limit, MaxStoredFailures)
	case window <= 0:
		return nil, fmt.Errorf("%w: window = %v, want > 0", ErrInvalid, window)
	}
	w := &Window{limit: limit, window: int64(window), clock: clock.Now, max: MaxStoredFailures,
		seed: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	for _, o := range opts {
		if err := o(w); err != nil {
			return nil, err
		}
	}
	for i := range w.shards {
		w.shards[i].index = make(map[string]int32)
	}
	w.lastSweep.Store(w.clock())
	return w, nil
}

// Limit returns the failures within the window at which a key is refused.
func (w *Window) Limit() int { return w.limit }

// Window returns the window's length.
func (w *Window) Window() time.Duration { return time.Duration(w.window) }

// lookup is a key as the table stores it: itself, or its digest when it is too long.
type lookup struct {
	digest [16]byte
	long   bool
	hash   uint64
}

func (w *Window) prepare(key string) (l lookup) {
	if len(key) > MaxKeyLen {
		l.long = true
		a := maphash.String(w.seed, key)
		b := maphash.String(w.seed2, key)
		for i := 0; i < 8; i++ {
			l.digest[i], l.digest[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
		}
		l.hash = a
		return l
	}
	l.hash = maphash.String(w.seed, key)
	return l
}

func (s *shard) find(key string, l *lookup) (int32, bool) {
	if l.long {
		i, ok := s.index[string(l.digest[:])] // no allocation: the compiler looks up without converting
		return i, ok
	}
	i, ok := s.index[key]
	return i, ok
}

// expire drops from e's ring the stamps no longer in the window at now and returns how many.
func (w *Window) expire(e *entry, now int64) (dropped int) {
	for e.n > 0 && now-e.ring[e.head] >= w.window {
		e.head++
		if int(e.head) == len(e.ring) {
			e.head = 0
		}
		e.n--
		dropped++
	}
	return dropped
}

// judge returns whether a key with entry e may pass at now, and if not the wait until the window
// holds limit − 1 of its failures, in [0, window]. It writes nothing.
func (w *Window) judge(e *entry, now int64) (bool, time.Duration) {
	// stamps are ascending: skip the expired ones at the head
	live := int(e.n)
	i := int(e.head)
	for live > 0 && now-e.ring[i] >= w.window {
		live--
		i++
		if i == len(e.ring) {
			i = 0
		}
	}
	if live < w.limit {
		return true, 0
	}
	// live == limit: the oldest live stamp decides; once it leaves, limit − 1 remain
	wait := e.ring[i] + w.window - now
	return false, time.Duration(min(max(wait, 0), w.window))
}

// Admit reports whether key may go ahead now, judged by the failures already counted; if not,
// retryAfter is how long until the window holds limit − 1 of its failures, so the next request
// would pass. It writes nothing and allocates nothing.
func (w *Window) Admit(key string) (ok bool, retryAfter time.Duration) {
	return w.AdmitAt(key, w.clock())
}

// AdmitAt is Admit at an explicit instant.
func (w *Window) AdmitAt(key string, now int64) (ok bool, retryAfter time.Duration) {
	l := w.prepare(key)
	s := &w.shards[l.hash%shards]
	s.mu.Lock()
	i, found := s.find(key, &l)
	if !found {
		s.mu.Unlock()
		return true, 0
	}
	ok, retryAfter = w.judge(&s.entries[i], now)
	s.mu.Unlock()
	return ok, retryAfter
}

// Record counts one failure of key now.
func (w *Window) Record(key string) { w.RecordAt(key, w.clock()) }

// RecordAt counts one failure of key at now. A now earlier than the key's newest stamp (a clock
// that went backwards) is stamped at that newest stamp, so the stamps stay ascending and no
// failure leaves the window sooner than one recorded before it.
func (w *Window) RecordAt(key string, now int64) {
	l := w.prepare(key)
	w.maybeSweep(now)
	reserved := false // room for one stamp, handed over by an eviction
	for attempt := 0; attempt < 4; attempt++ {
		done, used := w.tryRecord(key, &l, now, reserved)
		if done {
			if reserved && !used {
				w.stored.Add(-1)
			}
			return
		}
		if reserved || !w.evict(now) {
			break
		}
		reserved = true
	}
	if reserved {
		w.stored.Add(-1)
	}
	w.uncounted.Add(1)
}

// tryRecord stores the failure if there is room for it (reserved says the caller holds room for
// one stamp already), or if the key is at its limit, which needs none. done is false when the
// table is full; used says whether the reserved room was taken.
func (w *Window) tryRecord(key string, l *lookup, now int64, reserved bool) (done, used bool) {
	s := &w.shards[l.hash%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	room := func() bool { return reserved || w.reserve() }
	i, found := s.find(key, l)
	if found {
		e := &s.entries[i]
		if d := w.expire(e, now); d > 0 {
			w.stored.Add(int64(-d))
		}
		if e.n > 0 {
			newest := e.ring[(int(e.head)+int(e.n)-1)%len(e.ring)]
			now = max(now, newest)
		}
		if int(e.n) == w.limit { // at the limit: the oldest gives its place, no new room needed
			e.ring[e.head] = now
			e.head++
			if int(e.head) == len(e.ring) {
				e.head = 0
			}
			return true, false
		}
		if !room() {
			return false, false
		}
		push(e, now, w.limit)
		return true, true
	}
	if !room() {
		return false, false
	}
	stored := key
	if l.long {
		stored = string(l.digest[:])
	} else {
		stored = strings.Clone(key) // never pin the caller's buffer
	}
	s.index[stored] = int32(len(s.entries))
	s.entries = append(s.entries, entry{key: stored, ring: make([]int64, 1)})
	e := &s.entries[len(s.entries)-1]
	e.ring[0], e.n = now, 1
	if n := int64(len(s.entries)); n > w.maxLen.Load() {
		w.maxLen.Store(n)
	}
	return true, true
}

// push appends a stamp to a ring holding fewer than limit, growing it (doubling, up to the limit)
// when full.
func push(e *entry, now int64, limit int) {
	if int(e.n) == len(e.ring) {
		grown := make([]int64, min(2*len(e.ring), limit))
		for k := 0; k < int(e.n); k++ {
			grown[k] = e.ring[(int(e.head)+k)%len(e.ring)]
		}
		e.ring, e.head = grown, 0
	}
	e.ring[(int(e.head)+int(e.n))%len(e.ring)] = now
	e.n++
}

// reserve takes room for one stamp, if the bound allows; the count never passes the bound, even
// for an instant.
func (w *Window) reserve() bool {
	for {
		n := w.stored.Load()
		if n >= w.max {
			return false
		}
		if w.stored.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// evict looks at up to evictionProbes keys chosen uniformly at random and forgets the first one
// below the limit (or with nothing left in the window). On success the room for one stamp stays
// reserved for the caller, so no other goroutine can take what this one freed.
func (w *Window) evict(now int64) bool {
	probes := 0
	for tries := 0; probes < evictionProbes && tries < 16*evictionProbes; tries++ {
		s := &w.shards[rand.Uint64()%shards]
		bound := w.maxLen.Load()
		if bound < 1 {
			return false
		}
		j := rand.Int64N(bound)
		s.mu.Lock()
		if j >= int64(len(s.entries)) { // rejection sampling: uniform over all keys
			s.mu.Unlock()
			continue
		}
		probes++
		e := &s.entries[j]
		freed := int64(w.expire(e, now))
		if int(e.n) >= w.limit {
			w.stored.Add(-freed)
			s.mu.Unlock()
			continue
		}
		if e.n > 0 {
			w.evictions.Add(1)
		}
		freed += int64(e.n)
		s.remove(int32(j))
		s.mu.Unlock()
		if freed == 0 { // a key whose stamps expired earlier, left for the sweep: no room made
			continue
		}
		w.stored.Add(-(freed - 1)) // keep one stamp's room for the caller
		return true
	}
	return false
}

// remove deletes entry i, moving the last entry into its place.
func (s *shard) remove(i int32) {
	last := int32(len(s.entries) - 1)
	delete(s.index, s.entries[i].key)
	if i != last {
		s.entries[i] = s.entries[last]
		s.index[s.entries[i].key] = i
	}
	s.entries[last] = entry{}
	s.entries = s.entries[:last]
}

// maybeSweep runs a sweep when the table has doubled since the last one or a window has passed.
func (w *Window) maybeSweep(now int64) {
	if now-w.lastSweep.Load() < w.window && w.stored.Load() < 2*max(w.swept.Load(), 1024) {
		return
	}
	if !w.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer w.sweeping.Store(false)
	w.sweep(now)
}

// sweep drops every expired stamp and every key left with none, shard by shard.
func (w *Window) sweep(now int64) {
	var longest int64
	for k := range w.shards {
		s := &w.shards[k]
		s.mu.Lock()
		for i := int32(0); i < int32(len(s.entries)); {
			e := &s.entries[i]
			if d := w.expire(e, now); d > 0 {
				w.stored.Add(int64(-d))
			}
			if e.n == 0 {
				s.remove(i)
				continue
			}
			i++
		}
		if len(s.entries) < cap(s.entries)/4 { // give the room back
			s.entries = append([]entry(nil), s.entries...)
		}
		longest = max(longest, int64(len(s.entries)))
		s.mu.Unlock()
	}
	w.maxLen.Store(longest)
	w.lastSweep.Store(now)
	w.swept.Store(w.stored.Load())
}

// Sweep drops every expired stamp and every key left with none, now. Record does this on its own
// when the table has doubled or a window has passed since the last sweep; call it to reclaim
// memory at a moment of your choosing.
func (w *Window) Sweep() { w.sweep(w.clock()) }

// Len returns how many keys are stored.
func (w *Window) Len() int {
	n := 0
	for k := range w.shards {
		s := &w.shards[k]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}

// Snapshot is a Window's state for dashboards.
type Snapshot struct {
	Keys      int   // keys stored
	Stored    int64 // failure stamps stored, at most MaxStoredFailures
	Evictions int64 // keys below the limit forgotten to make room
	Uncounted int64 // failures not counted: no room, and every probed key at the limit
}

// Snapshot returns the window's state; its fields are read one by one.
func (w *Window) Snapshot() Snapshot {
	return Snapshot{Keys: w.Len(), Stored: w.stored.Load(), Evictions: w.evictions.Load(), Uncounted: w.uncounted.Load()}
}
