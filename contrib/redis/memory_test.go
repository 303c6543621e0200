package wardredis_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	wardredis "github.com/wardgo/ward/contrib/redis"
)

// TestLongKeys: the local table holds a bounded amount of memory per key, whatever the keys'
// length: a thousand keys of 64 KiB leave no more than a few KiB each behind (the keys
// themselves would be 64 MiB), and a long key keeps its own state.
func TestLongKeys(t *testing.T) {
	s := server(t)
	c := client(t, s)
	var now int64 // stands still
	l, err := wardredis.NewBucket(c, prefix(t), 1, 2, wardredis.WithLease(2, time.Hour),
		wardredis.WithClock(func() int64 { return now }), wardredis.WithKeys(2000), wait)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := strings.Repeat("k", 64<<10)
	// a long key leases and refuses as any other, and apart from another long key
	for i, want := range []bool{true, true, false} {
		if d, err := l.Take(ctx, long+"a", 1); err != nil || d.OK != want {
			t.Fatalf("long key a, call %d: %+v, %v", i, d, err)
		}
	}
	if d, err := l.Take(ctx, long+"b", 1); err != nil || !d.OK {
		t.Fatalf("long key b: %+v, %v", d, err)
	}
	s.Stop() // from here the store fails, and only the table grows
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	key := []byte(long)
	for i := range 1000 {
		key[0], key[1] = byte('a'+i%26), byte('a'+i/26%26)
		key[2] = byte('a' + i/676)
		_, _ = l.Take(ctx, string(key), 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("the table grew by %d bytes", grew)
	if grew > 8<<20 {
		t.Fatalf("a thousand keys of 64 KiB hold %d bytes in the local table, want a few KiB a key", grew)
	}
}
