// Package smartconnpool compares ward's pool, under callers that contend for it, with vitess's
// smartconnpool (vitess.io/vitess v0.24.4, go/pools/smartconnpool), with a pool made of a
// buffered channel, and with that channel pool guarded against a double release by one
// compare-and-set a release (chan-guarded: the least a lock-free channel pool that detects one
// adds; ward's checks every Release). It is a module of its own because smartconnpool's imports
// (vitess's servenv, log and vterrors) pull in most of the vitess module's requirements; `make
// bench-pool` runs it.
//
// BenchmarkContended measures the steady state of a pool of 8 resources shared by 8, 64 or 512
// times as many goroutines: ns per acquire+release, and the bytes and allocations of those calls.
// Each benchmark run starts its goroutines, which borrow in a loop until the run's borrows are
// done (counted by one shared atomic counter, the same for every pool), and times the b.N borrows
// that end after a warm-up of 4 borrows per goroutine: every goroutine has then waited its turn
// a few times, so neither starting the goroutines nor what a first wait costs (a goroutine's
// stack grown, the runtime's and a pool's wait records) is measured, and every goroutine is still
// borrowing when the last timed borrow ends, so no run ends with a few stragglers alone. Run it
// with -benchtime fixed in iterations (make bench-pool does), so that each run does the same work,
// and -rotate k to run the pools in Impls' order turned left by k places (make bench-pool passes
// the round's number), so that no pool is always the first of a row in its process.
package smartconnpool
