package failurewindow

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
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

// ErrInvalid is matched by every configuration error of [New] (as is ward.ErrInvalid); the
// message names the parameter or option.
var ErrInvalid = contract.Invalid("failurewindow: invalid configuration")

// ErrTooManyFailures is the refusal [Window.Do] returns for a key at its limit, carrying the wait
// until the key would pass (ward.RetryAfter reads it). It matches ward.ErrRefused too.
var ErrTooManyFailures = contract.Quota("failurewindow: too many failures")

// Window counts failures per key over a sliding window of time, in bounded memory, for any
// number of goroutines: has this key failed too often lately?
//
// [Window.Admit] judges a key by the failures already counted when the request enters;
// [Window.Record] counts a failure when it happens; [Window.Do] does both around a call. Requests
// admitted concurrently below the limit may push a key's count past it, by no more than the
// number admitted at once: the count is of outcomes, and nobody knows an outcome before it
// happens.
//
// A failure is in the window while less than the window has passed since it; exactly a window
// later it is out. Per key only the stamps of its failures in the window are kept, ascending, at
// most limit of them: the limit-th newest decides admission and the wait. A key whose failures
// have all expired is indistinguishable from an absent one and is removed by a sweep, which runs
// in the recording goroutine when the table has doubled since the last sweep or a window has
// passed since it; no goroutine of the Window's own.
//
// Instants are nanoseconds of the Window's clock ([Window.Now]): ward's monotonic clock, or the
// one given [WithClock]. The …At methods take an instant of that clock; a stamp more than a window
// later than the instant of a call that reads it is pulled back to that instant (see the package
// doc's edge cases), so instants of another origin can neither wedge a key nor free it early.
//
// At most [MaxStoredFailures] stamps are kept across all keys. A new failure with no room evicts
// a key below the limit, found by probing at most 8 keys chosen uniformly at random (rejection
// sampling over the shards; never map iteration order). A key at the limit is never evicted: a
// flood of fresh addresses cannot wash out the one guessing passwords. If every probed key is at
// the limit, the new failure is not counted, and [Snapshot].Uncounted says so. [WithRand] replaces
// the draws.
//
// [Core] is the same table as pure arithmetic, with the instants and the draws passed in.
//
// The table is 256 shards on cache lines of their own. Admit hashes the key once and reads its
// shard's index and the key's published stamps without a lock and without writing anything (no
// allocation, known key or not); it takes the shard's lock only when it catches a write to that
// key under way, or to pull back stamps from a far future. Record holds one shard's lock, and takes
// the shared stamp count by an atomic add when it stores a new stamp. A Window must not be copied
// after first use; build one with [New].
type Window struct {
	_ stripe.NoCopy
	config
	_ [configPad]byte
	counters
	_      [countersPad]byte
	heads  [shards]head // read by every Admit, written when a shard publishes an index
	shards [shards]shard
}

// config is what every call reads and nothing writes after New: a cache line (or more) of its
// own, apart from the counters Record writes.
type config struct {
	rules                   // the limit and the window
	keying                  // the seeds long keys are digested under
	clock  func() int64     // WithClock's clock; nil: ward's (read directly, a call fewer)
	own    func(error) bool // WithOwnError's predicate; nil: none
	fail   func(error) bool // WithFailure's predicate; nil: none
	max    int64            // MaxStoredFailures; lowered only by tests
	roll   func() float64   // the eviction's draws
	counts stripe.Table     // the calls' counts, per P, in internal/tally's words (ward.Counts)
}

// counters are the shared words Record and the sweep write.
type counters struct {
	stored    atomic.Int64 // stamps across all keys
	evictions atomic.Int64
	uncounted atomic.Int64
	maxLen    atomic.Int64 // a bound on any shard's key count, for rejection sampling
	lastSweep atomic.Int64
	swept     atomic.Int64 // stamps stored right after the last sweep
	sweeping  atomic.Bool
}

// shard is one lock and its part of the table, padded to whole cache lines so two shards' locks
// never share one.
type shard struct {
	table
	_ [tablePad]byte
}

type table struct {
	mu      sync.Mutex
	head    *head    // where readers find the index (index.go); set by New
	groups  []group  // key → entry, read without the lock through head; under mu
	used    int      // index slots holding an entry or a tombstone; under mu
	entries []*entry // dense, for uniform probing; under mu
}

// The padding that takes each part to a whole number of cache lines, sized from the parts
// themselves so that it holds on every target (TestLayout checks it).
const (
	configPad   = (stripe.CacheLine - unsafe.Sizeof(config{})%stripe.CacheLine) % stripe.CacheLine
	countersPad = (stripe.CacheLine - unsafe.Sizeof(counters{})%stripe.CacheLine) % stripe.CacheLine
	tablePad    = (stripe.CacheLine - unsafe.Sizeof(table{})%stripe.CacheLine) % stripe.CacheLine
)

// entry is one key's failures: a ring of stamps, ascending from head, n of them, written only
// under its shard's lock. What Admit needs of it (is the ring full, its oldest and newest stamp) is
// published in atomic words under a sequence number, so Admit reads it without the lock: a reader
// that sees the number odd or changed across its reads takes the lock instead.
//
// The key's bytes follow the entry in the same allocation (allocEntry picks the smallest of the
// entryOf types that holds them), right after the words Admit reads, so that a lookup finds the
// hash, the published words and the key's bytes at addresses it knows as soon as it has the entry:
// no pointer to follow to a key stored elsewhere, and a key of up to 16 bytes shares one cache
// line with them (an entry of up to 64 bytes is a line of its own).
type entry struct {
	ring *int64 // the ring's first stamp (stamps)
	at   int32  // index in ring of the oldest stamp
	n    int32  //
	hk   uint64 // the key's hash under the Window's keys (keying), its low byte the key's length (hashLen); set before the entry is published
	// seq, head and tail are read and written with sync/atomic's functions only (a method of an
	// atomic type, inlined, leaves a no-op in Admit's code); the zero-size field puts them on
	// 8-byte boundaries on 32-bit targets too, as 64-bit atomics need (TestEntryAtomicsAligned).
	_    [0]atomic.Uint64
	seq  uint64 // bit 0: being written; bit 1: n == limit; the rest counts writes, so it only grows
	head int64  // the ring's oldest stamp, as of the last publish
	tail int64  // the ring's newest stamp, as of the last publish
	// the key's bytes follow (key)
}

// entryOf is an entry with room for up to len(K) bytes of key after it.
type entryOf[K any] struct {
	entry
	key K
}

// hashLen is what an entry of a key of n bytes with hash h holds in hk: the hash with its low
// byte, which names the shard and so is the same for every key of a shard, replaced by n.
func hashLen(h uint64, n int) uint64 { return h&^0xff | uint64(n) }

// key returns e's key: its bytes, stored after it.
func (e *entry) key() string { return unsafe.String((*byte)(e.keyAt()), int(e.hk&0xff)) }

// keyAt returns where e's key's bytes start.
func (e *entry) keyAt() unsafe.Pointer { return unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(*e)) }

// newRing returns a ring of size stamps, its size stored in the word before the first.
func newRing(size int) *int64 {
	r := make([]int64, size+1)
	r[0] = int64(size)
	return &r[1]
}

// stamps returns e's ring. The caller holds the shard's lock, or owns e.
func (e *entry) stamps() []int64 {
	return unsafe.Slice(e.ring, *(*int64)(unsafe.Add(unsafe.Pointer(e.ring), -8)))
}

// Option configures a [Window]; [New] applies the options in order and returns the first error.
type Option func(*config) error

// WithClock replaces the clock: nanoseconds from any monotonic origin. Admit, Record, Do and Now
// read it; the …At methods take an instant of it. A nil clock is an error.
func WithClock(now func() int64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithClock", &c.clock, now) }
}

// WithRand replaces the draw source the eviction probe chooses keys with (default: math/rand/v2's
// lock-free per-thread generator). A draw outside [0, 1), NaN included, is held into it. A nil
// source is an error.
func WithRand(roll func() float64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithRand", &c.roll, roll) }
}

// WithOwnError says which errors of [Window.Do]'s fn are the caller's own (a wrong password is a
// failure to count, but "no such user", a validation error or a bad request may not be): Do
// records nothing for them. A nil predicate is an error.
func WithOwnError(own func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithOwnError", &c.own, own) }
}

// WithFailure says which errors of [Window.Do]'s fn are failures even when [WithOwnError] would
// call them the caller's own: Do records them. Every error that is not the caller's own, the
// caller's cancellation or nil is recorded already. A nil predicate is an error.
func WithFailure(fail func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithFailure", &c.fail, fail) }
}

// New returns an empty window admitting a key while it has fewer than limit failures within
// window. An unset (zero) or negative parameter is an error, never a silent default: zero would
// mean "no limit", and a value the constructor made up is invisible to whoever reviews the
// configuration. A limit above [MaxStoredFailures] is an error too: no key could ever reach it.
// A nil option is an error.
func New(limit int, window time.Duration, opts ...Option) (*Window, error) {
	if err := validate(limit, window); err != nil {
		return nil, err
	}
	w := &Window{config: config{rules: rules{limit: limit, window: int64(window)}, keying: newKeying(),
		max: MaxStoredFailures, roll: draw.Float64}}
	if err := contract.Apply(ErrInvalid, &w.config, opts); err != nil {
		return nil, err
	}
	w.counts.Init(tally.Words)
	for i := range w.shards {
		w.shards[i].head = &w.heads[i]
		w.heads[i].ix.Store(noIndex)
	}
	w.lastSweep.Store(w.Now())
	return w, nil
}

// Now returns the instant Admit, Record and Do decide at: nanoseconds of the Window's clock,
// ward's monotonic clock or the one given [WithClock]. Every …At method's now is an instant of
// this clock.
func (w *Window) Now() int64 {
	if w.clock == nil {
		return clock.Now()
	}
	return w.clock()
}

// Limit returns the failures within the window at which a key is refused.
func (w *Window) Limit() int { return w.limit }

// Window returns the window's length.
func (w *Window) Window() time.Duration { return time.Duration(w.window) }

// newest returns the latest of e's stamps; e holds at least one. head < len(ring) and
// n <= len(ring), so one subtraction wraps the index (a division would cost more on Admit's path).
func (e *entry) newest() *int64 {
	r := e.stamps()
	k := int(e.at) + int(e.n) - 1
	if k >= len(r) {
		k -= len(r)
	}
	return &r[k]
}

// Admit reports whether key may go ahead now, judged by the failures already counted; if not,
// retryAfter is how long until the window holds limit − 1 of its failures, so the next request
// would pass: more than zero and at most the window. It allocates nothing and writes nothing but
// a pull-back of stamps from a far future; it reads the clock only for a key with failures on
// record.
func (w *Window) Admit(key string) (ok bool, retryAfter time.Duration) {
	return w.admit(key, 0, true)
}

// AdmitAt is Admit at now, an instant of the Window's clock ([Window.Now]).
func (w *Window) AdmitAt(key string, now int64) (ok bool, retryAfter time.Duration) {
	return w.admit(key, now, false)
}

// admit judges key at now, or, when clocked, at the clock's reading (taken only for a key the
// table holds), and counts the answer. It reads the key's entry without the lock from its
// published words (index.go); a write under way or during the reads, or stamps that need a
// pull-back (a write), send it to admitLocked.
//
// It pins its P before the lookup, so that the pin's work overlaps the lookup's rather than
// following it, and counts the answer in the P's row before it unpins. Nothing that runs pinned
// can panic, block or call the user's code: find takes no lock and makes no call, and ward's clock
// is read pinned; the user's clock (WithClock) and the shard's lock are taken unpinned, and the
// answer is then counted by add.
func (w *Window) admit(key string, now int64, clocked bool) (ok bool, retryAfter time.Duration) {
	if len(key) > MaxKeyLen {
		return w.admitLong(key, now, clocked)
	}
	r := w.counts.Current() // add's work written out: no call on the common path
	row := r.Row(stripe.PinRow(r))
	if row == nil { // GOMAXPROCS grew past the rows: add grows them, below
		stripe.Unpin()
	} // pinned while row is not nil
	if e, _ := w.find(&w.heads, key); e != nil {
		switch {
		case !clocked:
		case w.clock == nil: // Now, written out: a direct call of ward's clock, inlined
			now = clock.Now()
		default:
			if row != nil {
				stripe.Unpin()
				row = nil
			}
			now = w.clock()
		}
		seq := atomic.LoadUint64(&e.seq)
		head, tail := atomic.LoadInt64(&e.head), atomic.LoadInt64(&e.tail)
		// seq even and unchanged across the reads: seq only grows, so a second reading equal to
		// seq with bit 0 cleared is both
		if atomic.LoadUint64(&e.seq) != seq&^1 || w.ahead(tail, now) {
			if row != nil {
				stripe.Unpin()
			}
			return w.counted(w.admitLocked(key, now))
		}
		// fewer than limit stamps, or the oldest has left: admitted, unless limit stamps are
		// in the window
		if seq&2 != 0 && !w.out(head, now) {
			retryAfter = w.wait(head, now)
			if row == nil {
				return w.counted(false, retryAfter)
			}
			tally.AddRow(row, tally.Refused)
			stripe.Unpin()
			return false, retryAfter
		}
	}
	// admitted: the answer is constant, so nothing is kept across the unpin
	if row == nil {
		w.add(tally.Admitted)
		return true, 0
	}
	tally.AddRow(row, tally.Admitted)
	stripe.Unpin()
	return true, 0
}

// counted counts an answer made unpinned in the calling P's row, and returns it.
func (w *Window) counted(ok bool, retryAfter time.Duration) (bool, time.Duration) {
	if ok {
		w.add(tally.Admitted)
	} else {
		w.add(tally.Refused)
	}
	return ok, retryAfter
}

// admitLong is admit of a key longer than MaxKeyLen: of its digest.
func (w *Window) admitLong(key string, now int64, clocked bool) (ok bool, retryAfter time.Duration) {
	var buf [16]byte
	return w.admit(w.digest(key, &buf), now, clocked)
}

// add counts one in word i (internal/tally's) of the calling P's row.
func (w *Window) add(i int) {
	tally.AddRow(w.counts.Pin(), uintptr(i))
	stripe.Unpin()
}

// admitLocked judges key at now under its shard's lock: the entry being written, or a pull-back
// to write.
func (w *Window) admitLocked(key string, now int64) (ok bool, retryAfter time.Duration) {
	_, h := w.find(&w.heads, key) // the hash, which names the shard to lock
	s := &w.shards[h%shards]
	s.mu.Lock()
	e, _ := w.find(&w.heads, key) // under the lock: the index as the lock's holders left it
	if e == nil {
		s.mu.Unlock()
		return true, 0
	}
	e.begin()
	ok, retryAfter = w.judge(e, now)
	e.publish(w.limit)
	s.mu.Unlock()
	return ok, retryAfter
}

// Record counts one failure of key now.
func (w *Window) Record(key string) { w.RecordAt(key, w.Now()) }

// RecordAt counts one failure of key at now, an instant of the Window's clock ([Window.Now]). A
// now earlier than the key's newest stamp (instants read out of order, or a clock that went
// backwards) is stamped at that newest stamp, so the stamps stay ascending and no failure leaves
// the window sooner than one recorded before it; a newest stamp more than a window later than now
// is first pulled back to now.
func (w *Window) RecordAt(key string, now int64) {
	w.add(tally.Failed)
	var buf [16]byte
	key = w.form(key, &buf)
	_, h := w.find(&w.heads, key) // the hash, which names the shard to lock
	w.maybeSweep(now)
	if done, _ := w.tryRecord(key, h, now, false); done {
		return
	}
	if !w.evict(w.Now()) { // other keys are judged on the Window's own clock, never on now
		w.uncounted.Add(1)
		return
	}
	// The eviction left room for one stamp reserved for this failure, so this try always stores
	// it, or finds the key at its limit (filled meanwhile), which needs no room: then the room is
	// given back.
	if _, used := w.tryRecord(key, h, now, true); !used {
		w.stored.Add(-1)
	}
}

// Do runs fn for key unless the key is at its limit, and counts a failure of key when fn fails.
// A refused key returns [ErrTooManyFailures] carrying the wait until it would pass (ward.RetryAfter
// reads it), without calling fn.
//
// fn's error is classified as every ward Do classifies it, and only a failure is recorded: a
// deadline (context.DeadlineExceeded), an error [WithFailure] accepts, and any other error that
// is not the caller's own. Nil (a success), the caller's cancellation (context.Canceled while ctx
// is done) and an error [WithOwnError] accepts (not found, validation) record nothing. A
// panicking fn is recorded as a failure and the panic continues. Do returns fn's error unchanged.
//
// Admission is judged at [Window.Now] before fn runs; the failure is stamped when fn returns.
// Do allocates nothing but the refusal's wait (one small value). A ctx already done returns its
// error (context.Canceled or context.DeadlineExceeded) without calling fn or recording anything.
func (w *Window) Do(ctx context.Context, key string, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	if ok, wait := w.Admit(key); !ok {
		return contract.Wait(ErrTooManyFailures, wait)
	}
	returned := false
	defer func() {
		if !returned { // fn panicked (or called runtime.Goexit): a failure
			w.Record(key)
		}
	}()
	err := fn(ctx)
	returned = true
	switch contract.Classify(ctx, err, w.own, w.fail, contract.Ignore, contract.Fail) {
	case contract.Fail:
		w.Record(key)
	case contract.Pass:
		w.add(tally.Passed)
	default:
		w.add(tally.Ignored)
	}
	return err
}

// tryRecord stores the failure if there is room for it (reserved says the caller holds room for
// one stamp already), or if the key is at its limit, which needs none. done is false when the
// table is full; used says whether the reserved room was taken.
func (w *Window) tryRecord(key string, h uint64, now int64, reserved bool) (done, used bool) {
	s := &w.shards[h%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	room := func() bool { return reserved || w.reserve() }
	if e, _ := w.find(&w.heads, key); e != nil { // under the lock: as the lock's holders left it
		e.begin()
		defer e.publish(w.limit)
		d, at := w.prepare(e, now)
		if d > 0 {
			w.stored.Add(int64(-d))
		}
		if w.full(e) { // at the limit: the oldest gives its place, no new room needed
			e.rotate(at)
			return true, false
		}
		if !room() {
			return false, false
		}
		push(e, at, w.limit)
		return true, true
	}
	if !room() {
		return false, false
	}
	e := newEntry(key, h, now)
	e.publish(w.limit)
	s.insert(e) // publishes e to readers: complete before
	s.entries = append(s.entries, e)
	if n := int64(len(s.entries)); n > w.maxLen.Load() {
		w.maxLen.Store(n)
	}
	return true, true
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
//
// Each probe draws twice: a shard, ⌊roll·shards⌋, and a place in it, ⌊roll·maxLen⌋, drawn again
// when the shard has no key there (rejection sampling, so every stored key is equally likely).
// It gives up after 16 × evictionProbes places drawn, whatever they found.
func (w *Window) evict(now int64) bool {
	probes := 0
	for tries := 0; probes < evictionProbes && tries < 16*evictionProbes; tries++ {
		s := &w.shards[pick(w.roll(), shards)]
		bound := w.maxLen.Load()
		if bound < 1 {
			return false
		}
		j := pick(w.roll(), bound)
		s.mu.Lock()
		if j >= int64(len(s.entries)) { // rejection sampling: uniform over all keys
			s.mu.Unlock()
			continue
		}
		probes++
		e := s.entries[j]
		e.begin()
		freed, forget, evicted := w.probe(e, now)
		e.publish(w.limit)
		if !forget {
			w.stored.Add(-freed)
			s.mu.Unlock()
			continue
		}
		if evicted {
			w.evictions.Add(1)
		}
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
	s.unplace(s.entries[i])
	s.entries[i] = s.entries[last]
	s.entries[last] = nil
	s.entries = s.entries[:last]
}

// maybeSweep runs a sweep when the table has doubled since the last one or a window has passed
// (a last sweep more than a window later than the instant counts as one a window old). now, the
// instant of one key's call, only says a sweep may be due: the sweep touches every key, so it
// runs at the Window's own clock, read then, and an instant of another origin handed to one key
// can neither expire nor pull back another key's failures.
func (w *Window) maybeSweep(now int64) {
	if !w.sweepDue(now) {
		return
	}
	own := w.Now()
	if own != now && !w.sweepDue(own) {
		return
	}
	if !w.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer w.sweeping.Store(false)
	w.sweep(own)
}

// sweepDue reports whether a sweep at now is due: the table has doubled since the last one, or a
// window has passed (or the last lies more than a window after now).
func (w *Window) sweepDue(now int64) bool {
	return w.rules.sweepDue(w.lastSweep.Load(), w.swept.Load(), w.stored.Load(), now)
}

// sweep drops every expired stamp and every key left with none, shard by shard.
func (w *Window) sweep(now int64) {
	var longest int64
	for k := range w.shards {
		s := &w.shards[k]
		s.mu.Lock()
		for i := int32(0); i < int32(len(s.entries)); {
			e := s.entries[i]
			e.begin()
			if d := w.expire(e, now); d > 0 {
				w.stored.Add(int64(-d))
			}
			e.publish(w.limit)
			if e.n == 0 {
				s.remove(i)
				continue
			}
			i++
		}
		if len(s.entries) < cap(s.entries)/4 { // give the room back
			s.entries = append([]*entry(nil), s.entries...)
		}
		if a := s.groups; a != nil && (len(s.entries) == 0 || len(a) > 1 && 16*len(s.entries) < groupSlots*len(a)) {
			s.rebuild(len(s.entries))
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
func (w *Window) Sweep() { w.sweep(w.Now()) }

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

// Counts returns the Window's counts since New ([ward.Counts]). Admitted and Refused are the
// answers of Admit and AdmitAt (and of Do, which asks Admit). Failed is every failure reported:
// each Record and RecordAt, Do's failures among them, whether or not the Window admitted the
// request it belonged to, and counted even when the table had no room to store it
// ([Snapshot].Uncounted). Passed and Ignored are Do's other outcomes: a success, and the calls
// Do records nothing for (the caller's cancellation, an error [WithOwnError] accepts). So with Do
// alone, Admitted − Passed − Failed − Ignored is the calls under way; with Admit and Record, whose
// successes are never reported, it is the admitted requests that did not fail. Abandoned stays
// zero: a Window never waits. The counts sit in per-P rows (a plain add on the calling P's own
// cache line, no shared word written) and are folded here.
func (w *Window) Counts() ward.Counts { return tally.CountsOf(w.counts.All(), 0) }
