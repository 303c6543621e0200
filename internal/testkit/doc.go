// Package testkit holds what the tests of ward's modules share and nothing else imports: skipping
// the long simulations in a -race build, and a real redis-server on a loopback port (package
// calls, beside it, drives guards and counts their calls). Imported by tests only; it needs
// nothing outside ward and the standard library (and redis-server on PATH for Redis).
package testkit
