//go:build !race

package stripe

// Load reads a stripe word. Plain in a normal build; atomic under -race.
//
//go:nosplit
func Load(p *int64) int64 { return *p }

// Store writes a stripe word. Plain in a normal build; atomic under -race.
//
//go:nosplit
func Store(p *int64, v int64) { *p = v }

// Add adds d to a stripe word that only the caller writes. Plain in a normal build (not atomic:
// one writer per word); atomic under -race.
//
//go:nosplit
func Add(p *int64, d int64) { *p += d }
