package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
	uatomic "go.uber.org/atomic"

	ufailurewindow "github.com/wardgo/ward/bench/user/failurewindow"
)

// The two modules the core may depend on, measured against what it uses instead (make
// bench-deps; the first two run in make bench too). BenchmarkKeyLookup is failurewindow's Admit of a known key beside the same
// lookup and decision built on xsync's MapOf (bare, and counting its answers exactly as Admit does
// for Counts, in two shared atomic words), the standard library's sync.Map and a mutex-guarded
// map; BenchmarkAtomicWord is sync/atomic beside go.uber.org/atomic on the words ward's hot paths
// move.

// lookupKeys are 4096 IPv6 addresses as text, and their copies: the table holds its own strings,
// each lookup brings another, as a server's requests do. The copies are made after all the keys,
// so no copy shares a cache line with the key a table stores (a request's key never sits next to
// the table's own): a lookup's comparison reads the stored key from where the table keeps it.
// The copies come in a shuffled order (a fixed seed), as requests' keys come in no relation to
// the order the table first stored them: a run of lookups does not walk the tables' allocations
// in the order they were made.
var lookupKeys, lookupCopies = func() ([]string, []string) {
	k, c := make([]string, 4096), make([]string, 4096)
	for i := range k {
		k[i] = fmt.Sprintf("2001:db8:85a3:8d3:1319:8a2e:%x:%x", i>>8, i&0xff)
	}
	for i, j := range rand.New(rand.NewPCG(1, 2)).Perm(len(k)) {
		c[i] = strings.Clone(k[j])
	}
	return k, c
}()

// paddedCount is a count on a cache line of its own.
type paddedCount struct {
	n atomic.Int64
	_ [56]byte
}

func BenchmarkKeyLookup(b *testing.B) {
	const window = int64(time.Minute)
	now := int64(time.Second)
	parallel := func(b *testing.B, admit func(key string) bool) {
		var seed atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			n := int(seed.Add(1000))
			for pb.Next() {
				n++
				if !admit(lookupCopies[n&4095]) {
					panic("a key under its limit refused")
				}
			}
		})
	}
	b.Run("impl=ward", func(b *testing.B) { // as a user's package calls it (package user/failurewindow)
		admit, err := ufailurewindow.Known(lookupKeys, 5, time.Minute, now)
		if err != nil {
			b.Fatal(err)
		}
		parallel(b, admit)
	})
	b.Run("impl=xsync-mapof", func(b *testing.B) {
		m := xsync.NewMapOf[string, *keyStamps]()
		for _, k := range lookupKeys {
			m.Store(k, new(keyStamps))
		}
		parallel(b, func(key string) bool { s, ok := m.Load(key); return !ok || s.admits(now, window) })
	})
	b.Run("impl=xsync-mapof-counted", func(b *testing.B) { // MapOf with Counts' two exact counts
		m := xsync.NewMapOf[string, *keyStamps]()
		for _, k := range lookupKeys {
			m.Store(k, new(keyStamps))
		}
		var counts [2]paddedCount // admitted, refused: one shared word each
		parallel(b, func(key string) bool {
			s, ok := m.Load(key)
			ok = !ok || s.admits(now, window)
			if ok {
				counts[0].n.Add(1)
			} else {
				counts[1].n.Add(1)
			}
			return ok
		})
	})
	b.Run("impl=sync-map", func(b *testing.B) {
		var m sync.Map
		for _, k := range lookupKeys {
			m.Store(k, new(keyStamps))
		}
		parallel(b, func(key string) bool {
			s, ok := m.Load(key)
			return !ok || s.(*keyStamps).admits(now, window)
		})
	})
	b.Run("impl=mutex-map", func(b *testing.B) {
		var mu sync.Mutex
		m := map[string]*keyStamps{}
		for _, k := range lookupKeys {
			m[k] = new(keyStamps)
		}
		parallel(b, func(key string) bool {
			mu.Lock()
			s, ok := m[key]
			mu.Unlock()
			return !ok || s.admits(now, window)
		})
	})
}

// BenchmarkAtomicWord: the operations ward's per-call paths use, on a word of the goroutine's own
// (no sharing: the instructions, not the cache line), with sync/atomic (impl=ward: what ward
// uses) and go.uber.org/atomic.
func BenchmarkAtomicWord(b *testing.B) {
	b.Run("op=add/impl=ward", func(b *testing.B) {
		var w atomic.Int64
		for b.Loop() {
			w.Add(1)
		}
	})
	b.Run("op=add/impl=uber-atomic", func(b *testing.B) {
		var w uatomic.Int64
		for b.Loop() {
			w.Add(1)
		}
	})
	b.Run("op=cas/impl=ward", func(b *testing.B) {
		var w atomic.Int64
		for b.Loop() {
			v := w.Load()
			w.CompareAndSwap(v, v+1)
		}
	})
	b.Run("op=cas/impl=uber-atomic", func(b *testing.B) {
		var w uatomic.Int64
		for b.Loop() {
			v := w.Load()
			w.CompareAndSwap(v, v+1)
		}
	})
	b.Run("op=float-store-load/impl=ward", func(b *testing.B) {
		var w atomic.Uint64
		x := 0.5
		for b.Loop() {
			w.Store(math.Float64bits(x))
			x = math.Float64frombits(w.Load()) + 1
		}
	})
	b.Run("op=float-store-load/impl=uber-atomic", func(b *testing.B) {
		var w uatomic.Float64
		x := 0.5
		for b.Loop() {
			w.Store(x)
			x = w.Load() + 1
		}
	})
}

// BenchmarkKeyIndexMemory reports what an index of 2^18 keys costs per key beyond the keys and
// the values themselves (both made before the first reading): the map's own nodes and buckets.
// One build per iteration; run with -benchtime 1x.
func BenchmarkKeyIndexMemory(b *testing.B) {
	const n = 1 << 18
	keys := make([]string, n)
	vals := make([]*keyStamps, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("2001:0db8:85a3:%04x:%04x:8a2e:0370:7334", i>>16, i&0xffff)
		vals[i] = new(keyStamps)
	}
	measure := func(b *testing.B, build func() any) {
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			m := build()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(m)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/key")
		}
	}
	b.Run("impl=xsync-mapof", func(b *testing.B) {
		measure(b, func() any {
			m := xsync.NewMapOf[string, *keyStamps]()
			for i, k := range keys {
				m.Store(k, vals[i])
			}
			return m
		})
	})
	b.Run("impl=sync-map", func(b *testing.B) {
		measure(b, func() any {
			var m sync.Map
			for i, k := range keys {
				m.Store(k, vals[i])
			}
			return &m
		})
	})
	b.Run("impl=go-map", func(b *testing.B) {
		measure(b, func() any {
			m := map[string]*keyStamps{}
			for i, k := range keys {
				m[k] = vals[i]
			}
			return m
		})
	})
	runtime.KeepAlive(keys)
	runtime.KeepAlive(vals)
}
