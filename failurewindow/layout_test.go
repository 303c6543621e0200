package failurewindow

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// TestLayout: the settings every call reads, the counters Record writes and each shard start on
// a cache line of their own (relative to the Window) and take whole lines, so no two shards' locks
// and no counter share a line with what Admit reads.
func TestLayout(t *testing.T) {
	const line = stripe.CacheLine
	var w Window
	for name, off := range map[string]uintptr{
		"config":   unsafe.Offsetof(w.config),
		"counters": unsafe.Offsetof(w.counters),
		"shards":   unsafe.Offsetof(w.shards),
	} {
		if off%line != 0 {
			t.Errorf("%s at offset %d, not on a %d-byte line", name, off, line)
		}
	}
	if unsafe.Offsetof(w.counters) == 0 || unsafe.Offsetof(w.shards) == unsafe.Offsetof(w.counters) {
		t.Error("the config and the counters share a line")
	}
	if size := unsafe.Sizeof(shard{}); size%line != 0 {
		t.Errorf("a shard is %d bytes, not a whole number of %d-byte lines", size, line)
	}
	if strconv.IntSize == 64 {
		if unsafe.Sizeof(group{}) != 64 {
			t.Errorf("a group is %d bytes, want 64: a cache line", unsafe.Sizeof(group{}))
		}
		// an entry with its key fills one of the allocator's size classes, 64 bytes (a line) and
		// up in steps of 16, the ninth holding the tombstone's key
		for i, size := range []uintptr{
			unsafe.Sizeof(entryOf[[16]byte]{}), unsafe.Sizeof(entryOf[[32]byte]{}),
			unsafe.Sizeof(entryOf[[48]byte]{}), unsafe.Sizeof(entryOf[[64]byte]{}),
			unsafe.Sizeof(entryOf[[80]byte]{}), unsafe.Sizeof(entryOf[[96]byte]{}),
			unsafe.Sizeof(entryOf[[112]byte]{}), unsafe.Sizeof(entryOf[[128]byte]{}),
			unsafe.Sizeof(entryOf[[144]byte]{}),
		} {
			if want := uintptr(64 + 16*i); size != want {
				t.Errorf("entry %d with its key is %d bytes, want %d", i, size, want)
			}
		}
	}
	// keyAt finds the key's bytes right after the entry: where every entryOf puts them
	for i, off := range []uintptr{
		unsafe.Offsetof(entryOf[[16]byte]{}.key), unsafe.Offsetof(entryOf[[32]byte]{}.key),
		unsafe.Offsetof(entryOf[[48]byte]{}.key), unsafe.Offsetof(entryOf[[64]byte]{}.key),
		unsafe.Offsetof(entryOf[[80]byte]{}.key), unsafe.Offsetof(entryOf[[96]byte]{}.key),
		unsafe.Offsetof(entryOf[[112]byte]{}.key), unsafe.Offsetof(entryOf[[128]byte]{}.key),
		unsafe.Offsetof(entryOf[[144]byte]{}.key),
	} {
		if off != unsafe.Sizeof(entry{}) {
			t.Errorf("entry %d's key at offset %d, want %d, the entry's size", i, off, unsafe.Sizeof(entry{}))
		}
	}
	if size := unsafe.Sizeof(w); size%line != 0 {
		t.Errorf("a Window is %d bytes, not a whole number of %d-byte lines", size, line)
	}
}

// TestEntryKey: an entry holds a copy of its key, of every length up to the tombstone's, and its
// hash but for the low byte, which holds the key's length; writing one entry's key leaves its
// neighbours' alone (under -race, checkptr also fails a key copied past its allocation). An entry
// and its key are one allocation, and an entry of a key of up to 16 bytes is a cache line of its
// own.
func TestEntryKey(t *testing.T) {
	const h = 0x9e3779b97f4a7c15
	if MaxKeyLen+1 > 0xff {
		t.Fatalf("the tombstone's key, %d bytes, does not fit the low byte of an entry's hash", MaxKeyLen+1)
	}
	var entries []*entry
	var keys []string
	for n := 0; n <= MaxKeyLen+1; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(n + i)
		}
		keys = append(keys, string(b))
		entries = append(entries, allocEntry(string(b), h))
	}
	for n, e := range entries {
		if got := e.key(); got != keys[n] {
			t.Fatalf("entry of a %d-byte key holds %q, want %q", n, got, keys[n])
		}
		if e.hk != hashLen(h, n) || e.hk>>8 != h>>8 || int(e.hk&0xff) != n {
			t.Fatalf("entry of a %d-byte key: hk %#x, want the hash %#x with its low byte %d", n, e.hk, uint64(h), n)
		}
		if n <= 16 && strconv.IntSize == 64 && uintptr(unsafe.Pointer(e))%64 != 0 {
			t.Fatalf("entry of a %d-byte key at %p, not on a 64-byte line", n, e)
		}
	}
	for _, n := range []int{0, 16, 17, 39, MaxKeyLen, MaxKeyLen + 1} {
		if a := testing.AllocsPerRun(10, func() { allocEntry(keys[n], h) }); a != 1 {
			t.Errorf("an entry of a %d-byte key takes %v allocations, want 1", n, a)
		}
	}
}

// An entry's seq, head and tail, read and written with 64-bit atomics, sit on 8-byte boundaries
// on every target (GOARCH=386 runs this too), and every entry starts on one.
func TestEntryAtomicsAligned(t *testing.T) {
	var e entry
	for name, off := range map[string]uintptr{
		"seq": unsafe.Offsetof(e.seq), "head": unsafe.Offsetof(e.head), "tail": unsafe.Offsetof(e.tail),
	} {
		if off%8 != 0 {
			t.Errorf("entry.%s at offset %d, not a multiple of 8", name, off)
		}
	}
	for _, k := range []string{"a", strings.Repeat("k", MaxKeyLen)} {
		if p := uintptr(unsafe.Pointer(allocEntry(k, 0))); p%8 != 0 {
			t.Errorf("an entry of a %d-byte key at %#x, not on an 8-byte boundary", len(k), p)
		}
	}
}
