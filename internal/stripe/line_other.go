//go:build !arm64

package stripe

// CacheLine is the size, in bytes, stripes and shared headers are padded to: 64 on amd64 and the
// other targets, as golang.org/x/sys/cpu.CacheLinePad has it.
const CacheLine = 64
