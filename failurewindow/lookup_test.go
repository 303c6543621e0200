package failurewindow

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// findAt is find over the index at base with mask, published as every shard's: the shard a
// key's hash names holds it, whichever it is.
func findAt(k *keying, base *group, mask uint64, key string) (*entry, uint64) {
	var heads [shards]head
	ix := &index{base: base, mask: mask}
	for i := range heads {
		heads[i].ix.Store(ix)
	}
	return k.find(&heads, key)
}

// noHeads is the heads of a table with no keys, for hashOf.
var noHeads = func() *[shards]head {
	var heads [shards]head
	for i := range heads {
		heads[i].ix.Store(noIndex)
	}
	return &heads
}()

// hashOf is key's hash under k: find's, over a table with no keys.
func hashOf(k *keying, key string) uint64 {
	_, h := k.find(noHeads, key)
	return h
}

// TestFindComparesEveryByte: among entries that share a hash and a length, find returns the one
// whose every byte matches the key, for every length up to MaxKeyLen (the words of the hash
// reused up to 32 bytes, a loop beyond), and nil when only keys a byte away are stored, or only
// keys one byte longer under the hash of the key.
func TestFindComparesEveryByte(t *testing.T) {
	k := &keying{k: [3]uint64{0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0}}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= MaxKeyLen; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		key := string(b)
		h := hashOf(k, key)
		index := func(withKey bool) []group {
			a := make([]group, 64)
			for i := range a {
				a[i].ctrl.Store(ctrlPad)
			}
			for i := range b {
				c := []byte(key)
				c[i] ^= 1 << (i % 8)
				place(a, allocEntry(string(c), h))
			}
			if withKey {
				place(a, allocEntry(key, h))
			}
			return a
		}
		a := index(true)
		if e, got := findAt(k, &a[0], uint64(len(a)-1), key); e == nil || e.key() != key || got != h {
			t.Fatalf("len %d: find = %v, %#x, want the key's entry and %#x", n, e, got, h)
		}
		a = index(false)
		if e, _ := findAt(k, &a[0], uint64(len(a)-1), key); e != nil {
			t.Fatalf("len %d: found %q for %q", n, e.key(), key)
		}
		if n > 0 {
			a := make([]group, 1)
			a[0].ctrl.Store(ctrlPad)
			place(a, allocEntry(key, hashOf(k, key[:n-1])))
			if e, _ := findAt(k, &a[0], 0, key[:n-1]); e != nil {
				t.Fatalf("len %d: found %q for a shorter key", n, e.key())
			}
		}
	}
}

// TestFindSkipsTombstones: a deleted key's slot, which probes go past, never matches a key, not
// even one with the tombstone's hash: the empty key, or MaxKeyLen zero bytes (the tombstone's key
// is zero bytes, one more), under hash keys that give both the hash 0.
func TestFindSkipsTombstones(t *testing.T) {
	k := &keying{k: [3]uint64{1, 0, 3}} // a zero middle key: every product with a zero word is 0
	for _, key := range []string{"", "a", string(make([]byte, MaxKeyLen))} {
		h := hashOf(k, key)
		if (h>>8 == tomb.hk>>8) != (key != "a") {
			t.Fatalf("key of %d bytes: hash %#x, tombstone's %#x", len(key), h, tomb.hk)
		}
		a := make([]group, 1)
		a[0].ctrl.Store(ctrlPad)
		for range groupSlots - 1 {
			place(a, allocEntry(key, h))
		}
		for k := range groupSlots - 1 {
			a[0].slot[k].Store(tomb) // deleted, as unplace leaves them
		}
		if e, _ := findAt(k, &a[0], 0, key); e != nil {
			t.Fatalf("key of %d bytes: found a tombstone", len(key))
		}
		e := allocEntry(key, h)
		place(a, e)
		if got, _ := findAt(k, &a[0], 0, key); got != e {
			t.Fatalf("key of %d bytes: the entry past the tombstones not found", len(key))
		}
	}
}

// TestHashEveryByte: under fixed hash keys, the hash of a key of any length up to MaxKeyLen moves
// when any one bit of it changes, and keys that differ only in a trailing zero byte hash apart.
func TestHashEveryByte(t *testing.T) {
	k := keying{k: [3]uint64{0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0}}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= MaxKeyLen; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		h := hashOf(&k, string(b))
		for i := range b {
			for bit := 0; bit < 8; bit++ {
				c := append([]byte(nil), b...)
				c[i] ^= 1 << bit
				if hashOf(&k, string(c)) == h {
					t.Fatalf("len %d: flipping bit %d of byte %d keeps the hash", n, bit, i)
				}
			}
		}
		if hashOf(&k, string(append(b, 0))) == h {
			t.Fatalf("len %d: a trailing zero byte keeps the hash", n)
		}
	}
}

// TestHashSpread: 2^16 addresses spread over the 256 shards as a uniform hash would spread them:
// every shard within 25% of the mean (four standard deviations), under fixed hash keys.
func TestHashSpread(t *testing.T) {
	w, err := New(1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w.k = [3]uint64{0x452821e638d01377, 0xbe5466cf34e90c6c, 0xc0ac29b7c97c50dd}
	var per [shards]int
	const n = 1 << 16
	for i := range n {
		per[hashOf(&w.keying, "10.0."+strconv.Itoa(i>>8)+"."+strconv.Itoa(i&255))%shards]++
	}
	for s, c := range per {
		if c < n/shards*3/4 || c > n/shards*5/4 {
			t.Fatalf("shard %d holds %d of %d keys, mean %d", s, c, n, n/shards)
		}
	}
}

// TestAdmitReadsClockForKnownKeys: Admit reads the clock for a key with failures on record, and
// not for one the table does not hold, which passes whatever the instant.
func TestAdmitReadsClockForKnownKeys(t *testing.T) {
	reads := 0
	w, err := New(1, time.Minute, WithClock(func() int64 { reads++; return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	w.RecordAt("198.51.100.1", 0)
	before := reads
	if ok, _ := w.Admit("198.51.100.2"); !ok || reads != before {
		t.Fatalf("unknown key: admitted %v, %d clock reads, want true and 0", ok, reads-before)
	}
	if ok, wait := w.Admit("198.51.100.1"); ok || wait != time.Minute || reads != before+1 {
		t.Fatalf("known key at its limit: %v %v, %d clock reads, want false 1m0s and 1", ok, wait, reads-before)
	}
	if c := w.Counts(); c.Admitted != 1 || c.Refused != 1 {
		t.Fatalf("counts %+v, want 1 admitted and 1 refused", c)
	}
}
