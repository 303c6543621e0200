package failurewindow

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// slots is a shard's index: open addressing with linear probing over a power-of-two array of
// entry pointers, read without a lock. Writers hold the shard's lock; they store a new entry only
// into an empty slot, delete by storing the tombstone, and never move an entry within an array:
// when entries and tombstones would fill three quarters of it they build a fresh array holding
// the live entries at most half full, and publish it with one atomic store. A reader probing the
// old array meanwhile finds what was there when it loaded it, so a lookup is as of some instant
// during the call, and a probe always ends at an empty slot.
type slots struct {
	s []atomic.Pointer[entry]
}

// tomb marks a deleted slot: probes go past it, inserts leave it to the next rebuild.
var tomb = new(entry)

// minSlots is the smallest index array: eight pointers, one cache line on amd64.
const minSlots = 8

// find returns key's entry, or nil. a may be nil (an empty shard).
func (a *slots) find(key string, l *lookup) *entry {
	if a == nil {
		return nil
	}
	if l.long {
		key = unsafe.String(&l.digest[0], len(l.digest)) // the stored form; no allocation
	}
	mask := uint64(len(a.s) - 1)
	for i := (l.hash >> 8) & mask; ; i = (i + 1) & mask { // the low 8 bits chose the shard
		e := a.s[i].Load()
		if e == nil {
			return nil
		}
		if e.hash == l.hash && e != tomb && e.key == key {
			return e
		}
	}
}

// place stores e in the first empty slot of its probe sequence.
func (a *slots) place(e *entry) {
	mask := uint64(len(a.s) - 1)
	for i := (e.hash >> 8) & mask; ; i = (i + 1) & mask {
		if a.s[i].Load() == nil {
			a.s[i].Store(e)
			return
		}
	}
}

// insert adds e, a key not in the index, to the shard's index; the caller holds the lock and
// appends e to entries afterwards.
func (s *shard) insert(e *entry) {
	a := s.index.Load()
	if a == nil || 4*(s.used+1) > 3*len(a.s) {
		a = s.rebuild(len(s.entries) + 1)
	}
	a.place(e)
	s.used++
}

// rebuild publishes a fresh index of the shard's entries, sized for live keys at most half full,
// or no index when live is zero. The caller holds the lock.
func (s *shard) rebuild(live int) *slots {
	if live == 0 {
		s.index.Store(nil)
		s.used = 0
		return nil
	}
	n := minSlots
	for 2*live > n {
		n *= 2
	}
	a := &slots{s: make([]atomic.Pointer[entry], n)}
	for _, e := range s.entries {
		a.place(e)
	}
	s.used = len(s.entries)
	s.index.Store(a)
	return a
}

// unplace deletes e from the shard's index. The caller holds the lock.
func (s *shard) unplace(e *entry) {
	a := s.index.Load()
	mask := uint64(len(a.s) - 1)
	for i := (e.hash >> 8) & mask; ; i = (i + 1) & mask {
		if a.s[i].Load() == e {
			a.s[i].Store(tomb)
			return
		}
	}
}

// begin marks e as being written; readers that see the mark take the lock. The caller holds the
// lock.
func (e *entry) begin() { e.seq.Store(e.seq.Load() | 1) }

// publish copies what Admit reads of e into its atomic words and ends a write begun by begin (or
// publishes a new entry). The caller holds the lock.
func (e *entry) publish(limit int) {
	if e.n > 0 {
		e.head.Store(e.ring[e.at])
		e.tail.Store(*e.newest())
	}
	next := (e.seq.Load() | 3) + 1
	if int(e.n) == limit {
		next |= 2
	}
	e.seq.Store(next)
}

// glance judges e at now from its published words, without the lock: sure is false when a write
// is under way or happened during the reads, or when the stamps need a pull-back (a write), and
// the caller must judge under the lock.
func (w *Window) glance(e *entry, now int64) (ok bool, retryAfter time.Duration, sure bool) {
	seq := e.seq.Load()
	head, tail := e.head.Load(), e.tail.Load()
	if seq&1 != 0 || e.seq.Load() != seq || w.ahead(tail, now) {
		return false, 0, false
	}
	if seq&2 == 0 || w.out(head, now) { // fewer than limit stamps, or the oldest has left
		return true, 0, true
	}
	return false, w.wait(head, now), true
}
