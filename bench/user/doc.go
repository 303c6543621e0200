// Package user holds, one package each, ward's implementations of the bench suite's calls, written
// as a user's program writes them: each package imports the one ward package it measures and the
// standard library, nothing else. The compiler decides inlining and escape per package, from the
// package's own code and what it imports, so ward's calls compiled here are the calls a user's
// build gets, whatever else the bench module imports; the suite's ward rows (bench.All) and the
// instruction counts (cmd/instructions) run these. Each package's test proves its calls allocate
// nothing in that shape.
//
// A call is func(work func(), outcome uint8) bool: admit, run work, settle with the outcome (0
// success, 1 failure), report whether the call was admitted; bench.Call has the same type.
package user
