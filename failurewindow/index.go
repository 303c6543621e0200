package failurewindow

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The shard's index: open addressing over a power-of-two array of groups, read without a lock.
// A group is one cache line: seven entry pointers and a control word whose byte k says whether
// slot k is empty (0) or holds an entry, and then seven bits of that entry's hash. A lookup
// probes groups from its home group (linear probing, a group at a time): it compares its own
// seven bits with the control word's bytes at once and dereferences only the slots that match,
// so an unknown key usually costs one cache line and no entry, and stops at the first group with
// an empty slot.
//
// Writers hold the shard's lock; they store a new entry only into an empty slot (the pointer
// first, then its control byte), delete by storing the tombstone in the slot (its control byte
// stays, so probes go past it), and never move an entry within an array: when entries and
// tombstones would fill three quarters of it they build a fresh array holding the live entries
// at most half full, and publish it. A slot once full stays full until the next array, so a group
// with an empty slot never had a later entry pushed past it: a reader may stop there. A reader
// probing the old array meanwhile finds what was there when it loaded it, so a lookup is as of
// some instant during the call.
//
// The shard publishes an array in its head (Window.heads: the heads of all shards are one dense
// array of pointers, written only when an index is published, so readers keep it cached) as an
// immutable pair, its first group and its mask, behind one pointer: a reader loads the pointer
// once and has both, as of one publication, and goes from there straight to the group it probes,
// without touching the shard's lock line.

// head is where a reader finds a shard's index: noIndex while the shard has none.
type head struct {
	ix atomic.Pointer[index]
}

// index is a published array of groups: its first group and its mask (groups − 1), never
// changed once published.
type index struct {
	base *group
	mask uint64
}

// group is seven slots and their control word: 64 bytes on 64-bit targets, a cache line. An array
// of up to 8 groups, or of 512 or more, starts on a line (a power of two, which the allocator
// aligns to its size); one of 16 to 256 starts 8 bytes into a line (the allocator's header before
// a small object with pointers of more than 512 bytes), which puts each group's control word and
// first six slots on one line and its seventh slot on the next.
type group struct {
	ctrl atomic.Uint64 // byte k < 7: 0 empty, else 0x80 | the top 7 bits of slot k's hash; byte 7: ctrlPad
	slot [groupSlots]atomic.Pointer[entry]
}

const (
	groupSlots = 7
	slotBits   = 8                  // bits of the control word per slot
	ctrlPad    = 0xff << 56         // byte 7, which has no slot: never empty, never matched
	bytes1     = 0x0101010101010101 // 1 in every byte
	lows       = 0x7f7f7f7f7f7f7f7f // the low 7 bits of every byte
	slotHighs  = 0x0080808080808080 // the high bit of bytes 0-6
)

// at returns slot k of g, k < groupSlots (a slot of the control word's bytes 0-6), without a
// bounds check.
func (g *group) at(k int) *atomic.Pointer[entry] {
	return (*atomic.Pointer[entry])(unsafe.Add(unsafe.Pointer(&g.slot), uintptr(k)*unsafe.Sizeof(g.slot[0])))
}

// fingerprint is the control byte of an entry with hash h: never 0.
func fingerprint(h uint64) uint64 { return 0x80 | h>>57 }

// zeros returns the high bit of every byte of x that is 0, among bytes 0-6. Exact: no byte's
// borrow or carry reaches another.
func zeros(x uint64) uint64 { return ^((x & lows) + lows | x) & slotHighs }

// matches returns the high bit of every slot of control word c whose byte is fp.
func matches(c, fp uint64) uint64 { return zeros(c ^ fp*bytes1) }

// empties returns the high bit of every empty slot of control word c.
func empties(c uint64) uint64 { return ^c & slotHighs }

// tomb marks a deleted slot: probes go past it, inserts leave it to the next rebuild. Its key is
// longer than any key the table stores, so no lookup matches it.
var tomb = allocEntry(string(make([]byte, MaxKeyLen+1)), 0)

// noIndex is the index of a shard with no keys: one empty group, so a lookup finds nothing
// without a branch of its own. New puts it in every head.
var noIndex = &index{base: new(group)}

// view returns the shard's index as of one publication: its first group and its mask.
func (hd *head) view() (base *group, mask uint64) {
	ix := hd.ix.Load()
	return ix.base, ix.mask
}

// groupAt returns group i of the index starting at base.
func groupAt(base *group, i uint64) *group {
	return (*group)(unsafe.Add(unsafe.Pointer(base), i*uint64(unsafe.Sizeof(*base))))
}

// find returns the hash of key (at most MaxKeyLen bytes: a key as the table stores it) under k's
// keys and the entry stored as key in the index heads publish, or nil. It hashes the key and
// probes its shard's index in one function that takes no lock and makes no call, and compares a
// candidate's key with the words it hashed: a key of up to 32 bytes is read once, in at most four
// words that may overlap; a longer one is compared a word at a time.
//
// The hash takes the key 16 bytes at a time, each pair of words multiplied into 128 bits and
// folded (the wyhash construction), under the three keys drawn when the table was built, so that
// no input zeroes a product, and no collision can be aimed at, without them. The last 16 bytes
// are folded apart from those before them, and the two results folded together, so that the
// multiplications of a key of up to 32 bytes are two deep. A key is compared in full wherever
// its hash matches: the hash only places it.
func (k *keying) find(heads *[shards]head, key string) (*entry, uint64) {
	n := len(key)
	var lo, hi uint64 // the words of key the hash reads last, which the compare reuses
	x := k.k[2] ^ uint64(n)
	switch {
	case n > 16: // all but the last 16 bytes folded into x, beside the last 16 rather than before them
		acc := k.k[0]
		if n > 32 {
			for i := 0; i < n-16; i += 16 {
				acc = fold(word(key, i)^k.k[1], word(key, i+8)^acc)
			}
		} else { // the loop, run once
			acc = fold(word(key, 0)^k.k[1], word(key, 8)^acc)
		}
		x ^= acc
		lo, hi = word(key, n-16), word(key, n-8)
	case n >= 8:
		lo, hi = word(key, 0), word(key, n-8)
	case n >= 4:
		lo, hi = half(key, 0), half(key, n-4)
	case n > 0:
		lo = uint64(key[0])<<16 | uint64(key[n>>1])<<8 | uint64(key[n-1])
	}
	h := fold(x, fold(lo^k.k[1], hi^k.k[0]))

	base, mask := heads[h%shards].view()
	// fingerprint(h) and hashLen(h, n), written out: inlined, each call would leave a no-op of its
	// own here (the lookup tests fail if these and the helpers part)
	fp, hl := 0x80|h>>57, h&^0xff|uint64(n)
	for i := (h >> 8) & mask; ; i = (i + 1) & mask { // the low 8 bits chose the shard
		g := groupAt(base, i)
		c := g.ctrl.Load()
	slots:
		for m := matches(c, fp); m != 0; m &= m - 1 {
			e := g.at(bits.TrailingZeros64(m) / slotBits).Load() // full: stored before its byte
			if e.hk != hl {
				continue
			}
			s := e.keyAt() // n bytes
			switch {
			case n > 16:
				if n <= 32 { // the loop below, run twice
					if wordAt(s, n-16) != lo || wordAt(s, n-8) != hi || wordAt(s, 0) != word(key, 0) || wordAt(s, 8) != word(key, 8) {
						continue
					}
					break
				}
				for j := 0; j < n-16; j += 8 {
					if wordAt(s, j) != word(key, j) {
						continue slots
					}
				}
				if wordAt(s, n-16) != lo || wordAt(s, n-8) != hi {
					continue
				}
			case n >= 8:
				if wordAt(s, 0) != lo || wordAt(s, n-8) != hi {
					continue
				}
			case n >= 4:
				if halfAt(s, 0) != lo || halfAt(s, n-4) != hi {
					continue
				}
			case n > 0:
				if byteAt(s, 0)<<16|byteAt(s, n>>1)<<8|byteAt(s, n-1) != lo {
					continue
				}
			}
			return e, h
		}
		if empties(c) != 0 {
			return nil, h
		}
	}
}

// place stores e in the first empty slot of its probe sequence in a: the pointer, then its
// control byte.
func place(a []group, e *entry) {
	mask := uint64(len(a) - 1)
	for i := (e.hk >> 8) & mask; ; i = (i + 1) & mask {
		g := &a[i]
		c := g.ctrl.Load()
		if m := empties(c); m != 0 {
			k := bits.TrailingZeros64(m) / slotBits
			g.slot[k].Store(e)
			g.ctrl.Store(c | fingerprint(e.hk)<<(slotBits*k))
			return
		}
	}
}

// insert adds e, a key not in the index, to the shard's index; the caller holds the lock and
// appends e to entries afterwards.
func (t *table) insert(e *entry) {
	if len(t.groups) == 0 || 4*(t.used+1) > 3*groupSlots*len(t.groups) {
		t.rebuild(len(t.entries) + 1)
	}
	place(t.groups, e)
	t.used++
}

// rebuild publishes a fresh index of the shard's entries, sized for live keys at most half full,
// or no index when live is zero. The caller holds the lock.
func (t *table) rebuild(live int) {
	var a []group
	if live > 0 {
		n := 1
		for 2*live > groupSlots*n {
			n *= 2
		}
		a = make([]group, n)
		for i := range a {
			a[i].ctrl.Store(ctrlPad)
		}
		for _, e := range t.entries {
			place(a, e)
		}
	}
	t.used = len(t.entries)
	t.publish(a)
}

// publish makes a the shard's index for readers. The caller holds the lock.
func (t *table) publish(a []group) {
	t.groups = a
	ix := noIndex
	if len(a) > 0 {
		ix = &index{base: &a[0], mask: uint64(len(a) - 1)}
	}
	t.head.ix.Store(ix)
}

// unplace deletes e from the shard's index. The caller holds the lock.
func (t *table) unplace(e *entry) {
	mask := uint64(len(t.groups) - 1)
	for i := (e.hk >> 8) & mask; ; i = (i + 1) & mask {
		for k := range t.groups[i].slot {
			if s := &t.groups[i].slot[k]; s.Load() == e {
				s.Store(tomb)
				return
			}
		}
	}
}

// begin marks e as being written; readers that see the mark take the lock. The caller holds the
// lock.
func (e *entry) begin() { atomic.StoreUint64(&e.seq, atomic.LoadUint64(&e.seq)|1) }

// publish copies what Admit reads of e into its atomic words and ends a write begun by begin (or
// publishes a new entry). The caller holds the lock.
func (e *entry) publish(limit int) {
	if e.n > 0 {
		atomic.StoreInt64(&e.head, e.stamps()[e.at])
		atomic.StoreInt64(&e.tail, *e.newest())
	}
	next := (atomic.LoadUint64(&e.seq) | 3) + 1
	if int(e.n) == limit {
		next |= 2
	}
	atomic.StoreUint64(&e.seq, next)
}
