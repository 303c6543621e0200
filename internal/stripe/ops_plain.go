//go:build !race && gc && !ward_nolinkname && (amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x)

package stripe

// Plain reports whether Load, Store and Add are plain memory operations (true) or atomic.
//
// They are plain only where that is both safe and worth it: a 64-bit target (a word-sized access
// cannot tear), a real per-P index (Pin through go:linkname, so one writer owns a row) and a
// build without -race.
const Plain = true

// Load reads a stripe word. Plain here; atomic in the builds listed on [Plain].
//
//go:nosplit
func Load(p *int64) int64 { return *p }

// Store writes a stripe word. Plain here; atomic in the builds listed on [Plain].
//
//go:nosplit
func Store(p *int64, v int64) { *p = v }

// Add adds d to a stripe word of the caller's own row. Plain here (not atomic: one writer per
// row); atomic in the builds listed on [Plain].
//
//go:nosplit
func Add(p *int64, d int64) { *p += d }
