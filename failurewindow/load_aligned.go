//go:build !(386 || amd64 || arm64)

package failurewindow

import (
	"encoding/binary"
	"unsafe"
)

// wordAt returns the 8 bytes from p + i on as a little-endian word, byte by byte (a target that
// may fault on a word at an unaligned address); the caller ensures they lie within one string's
// bytes (or one entry's key).
func wordAt(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])
}

// halfAt returns the 4 bytes from p + i on as a little-endian word, as wordAt does.
func halfAt(p unsafe.Pointer, i int) uint64 {
	return uint64(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(p, i))[:]))
}

// word returns the 8 bytes of s from byte i on as wordAt does; the caller ensures
// 0 <= i <= len(s) − 8.
func word(s string, i int) uint64 { return wordAt(unsafe.Pointer(unsafe.StringData(s)), i) }

// half returns the 4 bytes of s from byte i on as halfAt does; the caller ensures
// 0 <= i <= len(s) − 4.
func half(s string, i int) uint64 { return halfAt(unsafe.Pointer(unsafe.StringData(s)), i) }
