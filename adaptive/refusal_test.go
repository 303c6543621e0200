package adaptive

import (
	"runtime"
	"sync"
	"testing"
)

// TestNoRefusalUnderLimit: as many callers as the limit acquire at once on a fresh Limiter, and
// none is refused, though the first ones move credits from the central pool to their Ps' pools
// meanwhile (a refusal that read the pools while credits were between them refused a call under
// the limit). Run at two Ps, where that race showed most often.
func TestNoRefusalUnderLimit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two Ps: the race shows most there
	for round := 0; round < 1000; round++ {
		rule, _ := NewFixed(20)
		lim, _ := New(rule)
		var wg sync.WaitGroup
		start := make(chan struct{})
		refused := make(chan int, 20)
		leases := make(chan Lease, 20)
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, ok := lim.Acquire()
				if !ok {
					refused <- 1
					return
				}
				leases <- l
			}()
		}
		close(start)
		wg.Wait()
		if len(refused) > 0 {
			t.Fatalf("round %d: %d of 20 refused under a limit of 20", round, len(refused))
		}
		close(leases)
		for l := range leases {
			l.Pass()
		}
	}
}
