// Package bench measures ward against the libraries its users would otherwise pick, in one run on
// one machine. Each comparison is a list of implementations behind one scenario helper, so that
// every implementation does the same work per call: acquire, the work (none, or a short spin),
// settle with the same outcome. The benchmarks are named Benchmark<Comparison>/work=<w>/impl=<name>
// so that `benchstat -col /impl` pivots them.
//
// What each anchor's call includes, and the configuration that keeps the comparison fair, is in
// the doc of each implementation below and in bench/README.md.
package bench

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Outcome is how a simulated call ends. It is a uint8, so that a call written in a package that
// does not import bench (package user's, as a user's program writes it) is a Call as it is.
type Outcome = uint8

const (
	// Success is a call that worked.
	Success Outcome = iota
	// Failure is a call that failed (a breaker counts it; a limiter settles it as a drop).
	Failure
)

// Call runs one call through an implementation: admission, work, settle with the outcome. It
// reports whether the call was admitted.
type Call func(work func(), o Outcome) bool

// Impl is one implementation of a comparison. New builds a fresh instance for one benchmark.
type Impl struct {
	Name string
	Note string // what its call includes
	New  func() Call
}

// Comparison is a scenario and the implementations that run it.
type Comparison struct {
	Name  string
	Impls []Impl
	// Prepare, when set, drives a fresh instance into the state the scenario measures (a failing
	// backend, an overloaded server) before timing starts; the benchmark calls cleanup once it is
	// done.
	Prepare func(c Call) (cleanup func())
	// Outcome is the outcome of every timed call.
	Outcome Outcome
	// WantAdmitted is the share of timed calls the scenario expects admitted: 1 for an admission
	// path, 0 for a refusal path (checked with a tolerance by the quick test).
	WantAdmitted float64
}

// Spin is the short piece of work the work=spin variants do inside the admitted section: about
// 100 ns of arithmetic, no memory traffic.
func Spin() {
	x := uint64(88172645463325252)
	for i := 0; i < 64; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink.Store(x)
}

var sink atomic.Uint64

// must is the call a user package built, or a panic: the suite's configurations are fixed, and
// TestScenarios builds every one.
func must(c func(work func(), outcome uint8) bool, err error) Call {
	if err != nil {
		panic(err)
	}
	return c
}

// None is the empty work.
func None() {}

// randFloat is the draw a mutex-guarded baseline makes: math/rand/v2's lock-free generator.
func randFloat() float64 { return rand.Float64() }

// semaphore is the floor a fixed bulkhead gives: a CAS loop in, an atomic add out.
type semaphore struct {
	n     atomic.Int64
	limit int64
}

func (s *semaphore) call(work func(), _ Outcome) bool {
	for {
		n := s.n.Load()
		if n >= s.limit {
			return false
		}
		if s.n.CompareAndSwap(n, n+1) {
			break
		}
	}
	work()
	s.n.Add(-1)
	return true
}

// guarded runs a pure core under one mutex: the straightforward version of ward's arithmetic.
type guarded struct{ mu sync.Mutex }
