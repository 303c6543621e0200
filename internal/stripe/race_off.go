//go:build !race

package stripe

// Race reports whether this is a -race build.
const Race = false
