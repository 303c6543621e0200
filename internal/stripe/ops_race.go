//go:build race

package stripe

import "sync/atomic"

// Load reads a stripe word. Plain in a normal build; atomic under -race.
func Load(p *int64) int64 { return atomic.LoadInt64(p) }

// Store writes a stripe word. Plain in a normal build; atomic under -race.
func Store(p *int64, v int64) { atomic.StoreInt64(p, v) }

// Add adds d to a stripe word that only the caller writes. Plain in a normal build (not atomic:
// one writer per word); atomic under -race.
func Add(p *int64, d int64) { atomic.AddInt64(p, d) }
