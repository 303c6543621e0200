package stripe

// CacheLine is the size, in bytes, stripes and shared headers are padded to. arm64 uses 128, as
// golang.org/x/sys/cpu.CacheLinePad does: Apple and Neoverse cores prefetch lines in pairs.
const CacheLine = 128
