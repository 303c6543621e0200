package failurewindow

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// The table's arithmetic, shared by [Core] and [Window]: what a key's stamps say at an instant,
// how a failure is stamped, which probed key an eviction forgets and when a sweep is due. Neither
// type judges a key any other way, so the two cannot drift apart.

// validate checks New's and NewCore's parameters.
func validate(limit int, window time.Duration) error {
	switch {
	case limit <= 0:
		return contract.Field(ErrInvalid, "limit", limit, "> 0")
	case limit > MaxStoredFailures:
		return contract.Field(ErrInvalid, "limit", limit, fmt.Sprintf("<= MaxStoredFailures (%d)", MaxStoredFailures))
	case window <= 0:
		return contract.Field(ErrInvalid, "window", window, "> 0")
	}
	return nil
}

// rules is a table's limit and window, and the arithmetic on one key's stamps.
type rules struct {
	limit  int
	window int64
}

// out reports whether a stamp at s has left the window at now: at least a window old. Exact for
// any two instants (the difference is taken in uint64, where int64 would wrap).
func (r *rules) out(s, now int64) bool {
	return now >= s && uint64(now)-uint64(s) >= uint64(r.window)
}

// ahead reports whether s is more than a window later than now: an instant of another origin, or
// of a clock that jumped back, which no stamp of this clock's recent past can be.
func (r *rules) ahead(s, now int64) bool {
	return s > now && uint64(s)-uint64(now) > uint64(r.window)
}

// wait is how long until a live stamp at oldest leaves the window, from now: in (0, window]. A
// stamp up to a window ahead of now (instants read out of order) is waited for as one at now.
func (r *rules) wait(oldest, now int64) time.Duration {
	if oldest >= now {
		return time.Duration(r.window)
	}
	return time.Duration(r.window - int64(uint64(now)-uint64(oldest)))
}

// pullBack reads a key whose newest stamp is more than a window later than now as a clock that
// jumped back to now: every stamp later than now becomes now, so they stay ascending, stay in the
// window for one more window of the clock in use, and not past that.
func (r *rules) pullBack(e *entry, now int64) {
	if e.n == 0 || !r.ahead(*e.newest(), now) {
		return
	}
	s := e.stamps()
	for k := int(e.n) - 1; k >= 0; k-- {
		p := &s[(int(e.at)+k)%len(s)]
		if *p <= now {
			return
		}
		*p = now
	}
}

// expire pulls back e's stamps from a far future and drops those outside the window at now;
// it returns how many it dropped.
func (r *rules) expire(e *entry, now int64) (dropped int) {
	r.pullBack(e, now)
	s := e.stamps()
	for e.n > 0 && r.out(s[e.at], now) {
		e.at++
		if int(e.at) == len(s) {
			e.at = 0
		}
		e.n--
		dropped++
	}
	return dropped
}

// judge returns whether a key with entry e may pass at now, and if not the wait until the window
// holds limit − 1 of its failures, in (0, window]. It writes nothing but a pull-back.
func (r *rules) judge(e *entry, now int64) (bool, time.Duration) {
	r.pullBack(e, now)
	// stamps are ascending: skip the expired ones at the head
	live := int(e.n)
	i := int(e.at)
	s := e.stamps()
	for live > 0 && r.out(s[i], now) {
		live--
		i++
		if i == len(s) {
			i = 0
		}
	}
	if live < r.limit {
		return true, 0
	}
	// live == limit: the oldest live stamp decides; once it leaves, limit − 1 remain.
	return false, r.wait(s[i], now)
}

// prepare readies e for a failure at now: it expires e (returning how many stamps it dropped)
// and returns the instant to stamp, now or e's newest stamp when that is later, so the stamps
// stay ascending. Then either e is at its limit and rotate stamps without new room, or the
// caller finds room for one stamp and pushes.
func (r *rules) prepare(e *entry, now int64) (dropped int, at int64) {
	dropped = r.expire(e, now)
	if e.n > 0 {
		now = max(now, *e.newest())
	}
	return dropped, now
}

// full reports whether e holds limit stamps.
func (r *rules) full(e *entry) bool { return int(e.n) == r.limit }

// rotate stamps a failure at now on e, which holds limit stamps: the oldest gives its place.
func (e *entry) rotate(now int64) {
	s := e.stamps()
	s[e.at] = now
	e.at++
	if int(e.at) == len(s) {
		e.at = 0
	}
}

// push appends a stamp to a ring holding fewer than limit, growing it (doubling, up to the limit)
// when full.
func push(e *entry, now int64, limit int) {
	s := e.stamps()
	if int(e.n) == len(s) {
		grown := unsafe.Slice(newRing(min(2*len(s), limit)), min(2*len(s), limit))
		for k := 0; k < int(e.n); k++ {
			grown[k] = s[(int(e.at)+k)%len(s)]
		}
		e.ring, e.at, s = &grown[0], 0, grown
	}
	s[(int(e.at)+int(e.n))%len(s)] = now
	e.n++
}

// newEntry returns the entry of a key's first failure, at now, holding its own copy of key (never
// the caller's buffer).
func newEntry(key string, h uint64, now int64) *entry {
	e := allocEntry(key, h)
	e.ring, e.n = newRing(1), 1
	*e.ring = now
	return e
}

// allocEntry returns an entry of key, with hash h, and no stamps: the smallest entryOf that holds
// the key's bytes, which it copies there. An entry and its key take a size class of the Go
// allocator from 64 bytes up in steps of 16, each entryOf one. key is at most MaxKeyLen + 1 bytes
// long (the tombstone's).
func allocEntry(key string, h uint64) *entry {
	e := entryAllocs[max(len(key)-1, 0)/16]()
	e.hk = hashLen(h, len(key))
	copy(unsafe.Slice((*byte)(e.keyAt()), len(key)), key)
	return e
}

// entryAllocs[i] allocates an entry with room for 16(i+1) bytes of key.
var entryAllocs = [...]func() *entry{
	allocOf[[16]byte], allocOf[[32]byte], allocOf[[48]byte], allocOf[[64]byte], allocOf[[80]byte],
	allocOf[[96]byte], allocOf[[112]byte], allocOf[[128]byte], allocOf[[144]byte],
}

func allocOf[K any]() *entry { return &new(entryOf[K]).entry }

// probe judges e, a key an eviction looked at, at now: its expired stamps are dropped, and forget
// says whether it is below its limit and so to be forgotten. freed counts the stamps it gives
// back (the expired ones, and all of them when forgotten); evicted says whether a forgotten key
// held any stamp in the window.
func (r *rules) probe(e *entry, now int64) (freed int64, forget, evicted bool) {
	freed = int64(r.expire(e, now))
	if int(e.n) >= r.limit {
		return freed, false, false
	}
	return freed + int64(e.n), true, e.n > 0
}

// sweepDue reports whether a sweep at now is due, for a table whose last sweep ran at last and
// left swept stamps and which holds stored now: the table has doubled since (and holds at least
// 2048), or a window has passed (or the last sweep lies more than a window after now).
func (r *rules) sweepDue(last, swept, stored, now int64) bool {
	return r.out(last, now) || r.ahead(last, now) || stored >= 2*max(swept, 1024)
}

// pick maps a draw to one of n ≥ 1 choices, uniformly: ⌊roll·n⌋, held below n. A draw outside
// [0, 1), NaN included, is held into it.
func pick(roll float64, n int64) int64 {
	return min(int64(draw.Clean(roll)*float64(n)), n-1)
}

// keying is how a table stores keys: as they are, or, when longer than MaxKeyLen, as a 128-bit
// digest under two seeds drawn when the table is built; and how it hashes what it stores.
type keying struct {
	seed  maphash.Seed
	seed2 maphash.Seed
	k     [3]uint64 // the short keys' hash keys, drawn when the table is built
}

func newKeying() keying {
	return keying{seed: maphash.MakeSeed(), seed2: maphash.MakeSeed(),
		k: [3]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64()}}
}

// form returns key as the table stores it: the key itself, or, when it is longer than MaxKeyLen,
// its 128-bit digest, written into buf.
func (k *keying) form(key string, buf *[16]byte) string {
	if len(key) > MaxKeyLen {
		return k.digest(key, buf)
	}
	return key
}

// fold multiplies a and b into 128 bits and returns the two halves xored.
func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// byteAt returns the byte at p + i, as wordAt does.
func byteAt(p unsafe.Pointer, i int) uint64 { return uint64(*(*byte)(unsafe.Add(p, i))) }

// digest returns key's 128-bit digest, written into buf.
func (k *keying) digest(key string, buf *[16]byte) string {
	a, b := maphash.String(k.seed, key), maphash.String(k.seed2, key)
	for i := 0; i < 8; i++ {
		buf[i], buf[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
	}
	return unsafe.String(&buf[0], len(buf)) // no allocation
}
