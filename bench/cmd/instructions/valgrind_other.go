//go:build !amd64

package main

// request would make a valgrind client request; only the amd64 sequence is written
// (valgrind_amd64.s), so here it answers as a program outside valgrind does: 0.
func request(*[6]uintptr) uintptr { return 0 }

// requests reports whether this target can make valgrind client requests.
const requests = false
