package adaptive

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/wardgo/ward/internal/procs"
)

// TestZeroLimiterPanicsBeforePinning: Acquire on a zero Limiter panics with a message that
// recover catches. It used to fault while pinned to its P, which kills the process.
func TestZeroLimiterPanicsBeforePinning(t *testing.T) {
	msg := func() (msg string) {
		defer func() { msg, _ = recover().(string) }()
		var l Limiter
		l.Acquire()
		return ""
	}()
	if !strings.HasPrefix(msg, "adaptive: ") {
		t.Fatalf("Acquire on a zero Limiter: panic %q, want one starting %q", msg, "adaptive: ")
	}
}

// TestRefusalCountExactAcrossGOMAXPROCS: every refusal is counted once while GOMAXPROCS moves.
func TestRefusalCountExactAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l, err := New(mustFixed(1))
	if err != nil {
		t.Fatal(err)
	}
	held, _ := l.Acquire() // the only slot: every other call is refused
	stop := procs.Flip()
	var wg sync.WaitGroup
	const workers, each = 32, 2000
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, ok := l.Acquire(); ok {
					t.Error("admitted past a limit of 1")
					return
				}
			}
		}()
	}
	wg.Wait()
	stop()
	held.Pass()
	if got := l.Snapshot().Refused; got != workers*each {
		t.Fatalf("Refused = %d, want %d", got, workers*each)
	}
}
