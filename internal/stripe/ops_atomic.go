//go:build race || !gc || ward_nolinkname || !(amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x)

package stripe

import "sync/atomic"

// Plain reports whether Load, Store and Add are plain memory operations (true) or atomic.
//
// They are atomic here: in a -race build (so the detector stays quiet, as sync.Pool's are), on a
// 32-bit target (where a plain 64-bit load can tear), and where Pin cannot read the real P index
// (-tags ward_nolinkname, or a compiler other than gc), since two goroutines may then write one
// row at once and a plain += would lose an update.
const Plain = false

// Load reads a stripe word.
func Load(p *int64) int64 { return atomic.LoadInt64(p) }

// Store writes a stripe word.
func Store(p *int64, v int64) { atomic.StoreInt64(p, v) }

// Add adds d to a stripe word.
func Add(p *int64, d int64) { atomic.AddInt64(p, d) }
