package rate

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// Permit is something that admits one call at a time at an instant and can take an admission
// back: the interface [Chained] and [Partitioned] compose. It is the one shape every limiter of
// this package shares with the adaptive limiter; a server guards a call through a limiter's own
// Allow or Do. [Bucket], [Sliding], [Period], [Gate], the concurrent limiters of this package and the
// adaptive limiter (through adaptive.Limiter.AsPermit) implement it; [Chained] and [Partitioned]
// are built from it. Implement it to chain or partition a limiter of your own.
type Permit interface {
	// Acquire admits one call at now (nanoseconds from the caller's monotonic origin), or refuses.
	Acquire(now int64) bool
	// Release takes back one admission made at or before now.
	Release(now int64)
}

// Gate is a count with a ceiling, the bulkhead shaped as a [Permit]: a link of a [Chain] or a
// [Partitioned] table that bounds how many calls are inside at once. It never asks what time it
// is, and it has no Do and no clock: it is a building block, not a guard. For a bulkhead a server
// calls on its own, with Do, Now and a handle settled with Pass, Fail or Ignore, use the adaptive
// package's Limiter with a fixed limit (adaptive.NewFixed(n), then adaptive.New), which is the same
// compare-and-set count under the library's one contract.
//
// Gate is safe for concurrent use and lock-free (a compare-and-set on one word); the zero value
// is a gate with no ceiling.
type Gate struct {
	held  atomic.Int64
	limit int64
}

// NewGate returns a gate nothing has entered. A limit of 0 means no ceiling, as the zero Gate has;
// a negative limit is an error.
func NewGate(limit int) (*Gate, error) {
	if limit < 0 {
		return nil, contract.Field(ErrInvalid, "limit", limit, ">= 0 (0: no ceiling)")
	}
	return &Gate{limit: int64(limit)}, nil
}

// Enter takes room if there is some, and reports whether it did.
func (g *Gate) Enter() bool {
	for {
		n := g.held.Load()
		if g.limit > 0 && n >= g.limit {
			return false
		}
		if g.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Leave gives room back. Leaving an empty gate does nothing: the count never goes negative.
func (g *Gate) Leave() {
	for {
		n := g.held.Load()
		if n <= 0 || g.held.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// Held returns how many are inside.
func (g *Gate) Held() int { return int(g.held.Load()) }

// Acquire is Enter: the [Permit] method.
func (g *Gate) Acquire(int64) bool { return g.Enter() }

// Release is Leave.
func (g *Gate) Release(int64) { g.Leave() }

// Chained admits a call only if every link does, asked in order; when one refuses, the links that
// had admitted it are released, in reverse order. It is as safe for concurrent use as its links.
type Chained struct{ links []Permit }

// Chain returns the links as one Permit.
func Chain(links ...Permit) *Chained { return &Chained{links: append([]Permit(nil), links...)} }

// Acquire asks every link at now, in order.
func (c *Chained) Acquire(now int64) bool {
	for i, l := range c.links {
		if !l.Acquire(now) {
			for j := i - 1; j >= 0; j-- {
				c.links[j].Release(now)
			}
			return false
		}
	}
	return true
}

// Release releases every link, in reverse order.
func (c *Chained) Release(now int64) {
	for j := len(c.links) - 1; j >= 0; j-- {
		c.links[j].Release(now)
	}
}

// DefaultPartitions is how many keys a [Partitioned] keeps unless told otherwise.
const DefaultPartitions = 10_000

// Partitioned keeps one limiter per key, made on first sight, so each caller has an allowance of
// its own. At most max keys are kept; past that the least recently used key of its shard is
// dropped, and made fresh (full) if seen again. The table is split into shards of an exact LRU
// each (a mutex, a map and a list), so the key dropped is the least recently used of its shard,
// not always of the whole table.
//
// The limiter of a key is called under its shard's lock, so a pure [Bucket], [Sliding] or
// [Period] per key is safe. Acquire admits one call; [Partitioned.Take] admits n and says how
// long a refused key waits, when its limiter knows. A known key costs a lock, a map lookup and a
// move to the front of a list: no allocation. Safe for concurrent use; must not be copied.
type Partitioned[P Permit] struct {
	make   func(key string) P
	shards []partShard[P]
	plain  bool // P has neither TakeAt nor Take: Take asks Acquire, without boxing a limiter
}

type partShard[P Permit] struct {
	mu         sync.Mutex
	index      map[string]*partNode[P]
	head, tail *partNode[P] // most and least recently used
	cap        int
}

type partNode[P Permit] struct {
	key        string
	p          P
	prev, next *partNode[P]
}

// NewPartitioned returns a table of at most max keys (0: [DefaultPartitions]) whose limiters make
// builds. A negative max or a nil make is an error.
func NewPartitioned[P Permit](max int, make func(key string) P) (*Partitioned[P], error) {
	if make == nil {
		return nil, contract.Field(ErrInvalid, "make", "nil", "a constructor")
	}
	if max < 0 {
		return nil, contract.Field(ErrInvalid, "max", max, ">= 0 (0: DefaultPartitions)")
	}
	if max == 0 {
		max = DefaultPartitions
	}
	n := 1
	for n < 64 && max/(2*n) >= 64 { // shards of at least 64 keys
		n *= 2
	}
	var zero P
	_, taker := any(zero).(Taker)
	t := &Partitioned[P]{make: make, shards: newShards[P](n), plain: any(zero) != nil && !taker}
	per, extra := max/n, max%n
	for i := range t.shards {
		t.shards[i].cap = per
		if i < extra {
			t.shards[i].cap++
		}
	}
	return t, nil
}

func newShards[P Permit](n int) []partShard[P] {
	s := make([]partShard[P], n)
	for i := range s {
		s[i].index = map[string]*partNode[P]{}
	}
	return s
}

// fnv1a spreads keys over shards; the map inside hashes again with its own seed.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func (t *Partitioned[P]) shard(key string) *partShard[P] {
	return &t.shards[fnv1a(key)&uint64(len(t.shards)-1)]
}

// with runs f on key's limiter under its shard's lock, making the limiter if the key is new.
func (t *Partitioned[P]) with(key string, f func(P)) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.index[key]
	if !ok {
		if len(s.index) >= s.cap {
			old := s.tail
			s.unlink(old)
			delete(s.index, old.key)
		}
		k := strings.Clone(key) // never pin the caller's buffer
		n = &partNode[P]{key: k, p: t.make(k)}
		s.index[k] = n
	} else {
		s.unlink(n)
	}
	s.pushFront(n)
	f(n.p)
}

func (s *partShard[P]) unlink(n *partNode[P]) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		s.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		s.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

func (s *partShard[P]) pushFront(n *partNode[P]) {
	n.next = s.head
	if s.head != nil {
		s.head.prev = n
	}
	s.head = n
	if s.tail == nil {
		s.tail = n
	}
}

// Acquire asks key's limiter at now.
func (t *Partitioned[P]) Acquire(key string, now int64) bool {
	var ok bool
	t.with(key, func(p P) { ok = p.Acquire(now) })
	return ok
}

// Take takes n calls at now from key's limiter and, when it refuses, says how long until they
// would pass, if the limiter knows: a [Taker] ([BucketLimiter], [SlidingLimiter],
// [PeriodLimiter], [Bucket], [Sliding], [Period]) is asked through TakeAt, and its wait comes back as it gave it (0 when ok, [Forever] when n is
// more than it ever admits). Any other [Permit] ([Gate], [Chained], the adaptive limiter's
// AsPermit) is asked Acquire n times, all or nothing (the calls it had admitted are released
// when one is refused), and its wait is 0: unknown. Like Acquire, it allocates nothing for a key
// already kept.
//
// # Edge cases
//
//   - A negative n costs nothing and is admitted, as n = 0 is.
//   - A limiter of your own with TakeAt or Take, held by value rather than by pointer, may be
//     copied to the heap on each Take (one allocation) to be asked through that method; hold it by
//     pointer, as this package's limiters are.
func (t *Partitioned[P]) Take(key string, now int64, n int) (ok bool, wait time.Duration) {
	t.with(key, func(p P) { ok, wait = t.take(p, now, n) })
	return ok, wait
}

// Taker is the one shape of every bucket, window and period, pure ([Bucket], [Sliding],
// [Period]) or concurrent ([BucketLimiter], [SlidingLimiter], [PeriodLimiter]): n calls at an
// instant, and when refused the wait until they would pass. A limiter of your own with this
// method gives its waits to [Partitioned] and wardhttp.
type Taker interface {
	TakeAt(now int64, n int) (ok bool, wait time.Duration)
}

// Limiter is a [Taker] with a clock of its own: the concurrent limiters, whose TakeAt takes
// instants of Now.
type Limiter interface {
	Taker
	Now() int64
}

// take asks p for n calls at now through the richest method it has. A P known to have neither
// (any type but an interface) is never converted to an interface: a limiter held by value would
// be copied to the heap.
func (t *Partitioned[P]) take(p P, now int64, n int) (bool, time.Duration) {
	if !t.plain {
		if q, ok := any(p).(Taker); ok {
			return q.TakeAt(now, n)
		}
	}
	for i := 0; i < n; i++ {
		if !p.Acquire(now) {
			for ; i > 0; i-- {
				p.Release(now)
			}
			return false, 0
		}
	}
	return true, 0
}

// Release releases one admission of key's limiter. A key dropped meanwhile is made fresh first,
// and the release then finds it full.
func (t *Partitioned[P]) Release(key string, now int64) {
	t.with(key, func(p P) { p.Release(now) })
}

// Len returns how many keys are kept.
func (t *Partitioned[P]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.index)
		s.mu.Unlock()
	}
	return n
}

// Key binds a Partitioned to one key as a Permit, for a [Chained] link.
func (t *Partitioned[P]) Key(key string) Permit { return partKey[P]{t, key} }

type partKey[P Permit] struct {
	t   *Partitioned[P]
	key string
}

func (k partKey[P]) Acquire(now int64) bool { return k.t.Acquire(k.key, now) }
func (k partKey[P]) Release(now int64)      { k.t.Release(k.key, now) }
