package failurewindow

import (
	"strconv"
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
	if strconv.IntSize == 64 && (unsafe.Sizeof(group{}) != 64 || unsafe.Sizeof(entry{}) != 64) {
		t.Errorf("a group is %d bytes and an entry %d, want 64: a cache line each", unsafe.Sizeof(group{}), unsafe.Sizeof(entry{}))
	}
	if size := unsafe.Sizeof(w); size%line != 0 {
		t.Errorf("a Window is %d bytes, not a whole number of %d-byte lines", size, line)
	}
}
