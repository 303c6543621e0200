package failurewindow

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/clock"
)

// mutexMap is the baseline a straightforward implementation gives: one mutex around a map of
// stamp slices. Its keys are copies, as a server's are: the key stored came with the request
// that first failed, and each later request brings its own string, so a lookup compares the
// bytes (with the caller's own string the map's comparison would stop at the pointer).
type mutexMap struct {
	mu     sync.Mutex
	m      map[string][]int64
	limit  int
	window int64
}

func (m *mutexMap) admit(key string, now int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.m[key] {
		if now-t < m.window {
			n++
		}
	}
	return n < m.limit
}

func (m *mutexMap) record(key string, now int64) {
	m.mu.Lock()
	s := m.m[key]
	if len(s) >= m.limit {
		s = s[1:]
	}
	if s == nil {
		key = strings.Clone(key)
	}
	m.m[key] = append(s, now)
	m.mu.Unlock()
}

var benchKeys = func() []string {
	k := make([]string, 4096)
	for i := range k {
		k[i] = fmt.Sprintf("2001:db8:85a3:8d3:1319:8a2e:%x:%x", i>>8, i&0xff)
	}
	return k
}()

func BenchmarkAdmit(b *testing.B) {
	for _, c := range []struct{ name, prefix string }{{"key=known", ""}, {"key=unknown", "x"}} {
		b.Run(c.name+"/impl=ward", func(b *testing.B) {
			w, _ := New(5, time.Minute)
			for _, k := range benchKeys {
				w.Record(k)
			}
			keys := prefixed(c.prefix)
			var i atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				n := int(i.Add(1000))
				for pb.Next() {
					n++
					w.Admit(keys[n&4095])
				}
			})
		})
		b.Run(c.name+"/impl=mutex", func(b *testing.B) {
			m := &mutexMap{m: map[string][]int64{}, limit: 5, window: int64(time.Minute)}
			for _, k := range benchKeys {
				m.record(k, clock.Now())
			}
			keys := prefixed(c.prefix)
			var i atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				n := int(i.Add(1000))
				for pb.Next() {
					n++
					m.admit(keys[n&4095], clock.Now())
				}
			})
		})
	}
}

func prefixed(p string) []string {
	if p == "" {
		return benchKeys
	}
	k := make([]string, len(benchKeys))
	for i := range k {
		k[i] = p + benchKeys[i]
	}
	return k
}

// BenchmarkRecord counts failures of 4096 keys that reach their limit and stay at it.
func BenchmarkRecord(b *testing.B) {
	b.Run("impl=ward", func(b *testing.B) {
		w, _ := New(5, time.Minute)
		var i atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := int(i.Add(1000))
			for pb.Next() {
				n++
				w.Record(benchKeys[n&4095])
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		m := &mutexMap{m: map[string][]int64{}, limit: 5, window: int64(time.Minute)}
		var i atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := int(i.Add(1000))
			for pb.Next() {
				n++
				m.record(benchKeys[n&4095], clock.Now())
			}
		})
	})
}
