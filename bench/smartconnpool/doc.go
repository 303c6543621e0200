// Package smartconnpool compares ward's pool, under callers that contend for it, with vitess's
// smartconnpool (vitess.io/vitess v0.24.4, go/pools/smartconnpool) and with a pool made of a
// buffered channel. It is a module of its own because smartconnpool's imports (vitess's servenv,
// log and vterrors) pull in most of the vitess module's requirements; `make bench-pool` runs it.
package smartconnpool
