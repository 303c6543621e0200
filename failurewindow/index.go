package failurewindow

import (
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"
)

// The shard's index: open addressing with linear probing over a power-of-two array of entry
// pointers, read without a lock. Writers hold the shard's lock; they store a new entry only into
// an empty slot, delete by storing the tombstone, and never move an entry within an array: when
// entries and tombstones would fill three quarters of it they build a fresh array holding the live
// entries at most half full, and publish it. A reader probing the old array meanwhile finds what
// was there when it loaded it, so a lookup is as of some instant during the call, and a probe
// always ends at an empty slot.
//
// The shard publishes an array as its first slot (table.index) and its size (in table.meta), both
// on the shard's own cache line, so a lookup goes from the shard straight to the slot it probes.
// meta is a sequence word: bit 0 is set while a new array is being published, bits 1-6 hold the
// log2 of its size, the bits above count publications. A reader that finds bit 0 set, or meta
// changed across its loads, takes the lock.

// tomb marks a deleted slot: probes go past it, inserts leave it to the next rebuild.
var tomb = new(entry)

// minSlots is the smallest index array: eight pointers, one cache line on amd64.
const minSlots = 8

// view returns the shard's index as of one instant: its first slot and its mask (base nil: no
// index, an empty shard). ok is false while an index is being published: take the lock.
func (t *table) view() (base *atomic.Pointer[entry], mask uint64, ok bool) {
	m := t.meta.Load()
	base = t.index.Load()
	if m&1 != 0 || t.meta.Load() != m {
		return nil, 0, false
	}
	return base, 1<<(m>>1&63) - 1, true
}

// slot returns slot i of the index starting at base.
func slot(base *atomic.Pointer[entry], i uint64) *atomic.Pointer[entry] {
	return (*atomic.Pointer[entry])(unsafe.Add(unsafe.Pointer(base), i*uint64(unsafe.Sizeof(*base))))
}

// find returns the entry stored as key (the key itself, or its digest when long) with hash h in
// the index at base, or nil. It takes no lock.
func find(base *atomic.Pointer[entry], mask uint64, key string, h uint64) *entry {
	if base == nil {
		return nil
	}
	for i := (h >> 8) & mask; ; i = (i + 1) & mask { // the low 8 bits chose the shard
		e := slot(base, i).Load()
		if e == nil {
			return nil
		}
		if e.hash == h && e != tomb && e.key == key {
			return e
		}
	}
}

// locked finds key under the shard's lock, which the caller holds.
func (t *table) locked(key string, h uint64) *entry {
	if len(t.slots) == 0 {
		return nil
	}
	return find(&t.slots[0], uint64(len(t.slots)-1), key, h)
}

// place stores e in the first empty slot of its probe sequence in a.
func place(a []atomic.Pointer[entry], e *entry) {
	mask := uint64(len(a) - 1)
	for i := (e.hash >> 8) & mask; ; i = (i + 1) & mask {
		if a[i].Load() == nil {
			a[i].Store(e)
			return
		}
	}
}

// insert adds e, a key not in the index, to the shard's index; the caller holds the lock and
// appends e to entries afterwards.
func (t *table) insert(e *entry) {
	if len(t.slots) == 0 || 4*(t.used+1) > 3*len(t.slots) {
		t.rebuild(len(t.entries) + 1)
	}
	place(t.slots, e)
	t.used++
}

// rebuild publishes a fresh index of the shard's entries, sized for live keys at most half full,
// or no index when live is zero. The caller holds the lock.
func (t *table) rebuild(live int) {
	var a []atomic.Pointer[entry]
	if live > 0 {
		n := minSlots
		for 2*live > n {
			n *= 2
		}
		a = make([]atomic.Pointer[entry], n)
		for _, e := range t.entries {
			place(a, e)
		}
	}
	t.used = len(t.entries)
	t.publish(a)
}

// publish makes a the shard's index for readers. The caller holds the lock.
func (t *table) publish(a []atomic.Pointer[entry]) {
	m := t.meta.Load()
	t.meta.Store(m | 1)
	t.slots = a
	var base *atomic.Pointer[entry]
	if len(a) > 0 {
		base = &a[0]
	}
	t.index.Store(base)
	t.meta.Store((m>>7+1)<<7 | uint64(bits.Len(uint(len(a)))-1)&63<<1)
}

// unplace deletes e from the shard's index. The caller holds the lock.
func (t *table) unplace(e *entry) {
	mask := uint64(len(t.slots) - 1)
	for i := (e.hash >> 8) & mask; ; i = (i + 1) & mask {
		if t.slots[i].Load() == e {
			t.slots[i].Store(tomb)
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
		e.head.Store(e.stamps()[e.at])
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
