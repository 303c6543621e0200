// Package testkit holds what the tests of ward's modules share and nothing else imports: skipping
// the long simulations in a -race build, and a real redis-server on a loopback port. Imported by
// tests only; it needs nothing but the standard library (and redis-server on PATH for Redis).
package testkit
