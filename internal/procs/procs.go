// Package procs moves GOMAXPROCS up and down under a test, as a container runtime moves it when a
// CPU limit changes (Go 1.25 and later follow the limit at run time). Imported by tests only.
package procs

import (
	"runtime"
	"sync"
)

// Flip changes GOMAXPROCS between 1 and 32 over and over, from a goroutine of its own, until stop
// is called. A test sets GOMAXPROCS to 1 before building the types it drives (and puts it back
// when done), so every P they meet later is past the rows they made.
func Flip() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			runtime.GOMAXPROCS([]int{8, 2, 32, 1, 16, 3, 5}[i%7])
			runtime.Gosched()
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
