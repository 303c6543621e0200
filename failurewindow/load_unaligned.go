//go:build 386 || amd64 || arm64

package failurewindow

import "unsafe"

// wordAt returns the 8 bytes from p + i on as a word, in the machine's byte order (the hash and
// the compare read keys the same way, so the order is the process's own); the caller ensures
// they lie within one string's bytes (or one entry's key). One load: these targets read a word at
// any address. Each reader below is the load itself, not a call of another, so that inlined it
// leaves no mark of its own in the caller's code.
func wordAt(p unsafe.Pointer, i int) uint64 { return *(*uint64)(unsafe.Add(p, i)) }

// halfAt returns the 4 bytes from p + i on as a word, as wordAt does.
func halfAt(p unsafe.Pointer, i int) uint64 { return uint64(*(*uint32)(unsafe.Add(p, i))) }

// word returns the 8 bytes of s from byte i on as wordAt does; the caller ensures
// 0 <= i <= len(s) − 8.
func word(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// half returns the 4 bytes of s from byte i on as halfAt does; the caller ensures
// 0 <= i <= len(s) − 4.
func half(s string, i int) uint64 {
	return uint64(*(*uint32)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i)))
}
