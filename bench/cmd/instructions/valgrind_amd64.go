package main

// request makes a valgrind client request (valgrind_amd64.s); it returns 0 outside valgrind.
//
//go:noescape
func request(args *[6]uintptr) uintptr

// requests reports whether this target can make valgrind client requests.
const requests = true
