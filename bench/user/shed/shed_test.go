package shed

import (
	"sync"
	"testing"
)

// TestAllocs: Allow and Pass or Fail on a cool server, and a refusal on a hot, full one, allocate
// nothing in a package shaped as a user's.
func TestAllocs(t *testing.T) {
	none := func() {}
	call, err := Shedder(300)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []uint8{0, 1} {
		if n := testing.AllocsPerRun(1000, func() {
			if !call(none, o) {
				t.Fatal("a cool server refused")
			}
		}); n != 0 {
			t.Errorf("outcome %d: %v allocations a call, want 0", o, n)
		}
	}

	hot, err := Shedder(1000)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	var started, finished sync.WaitGroup
	for range 1000 { // calls in flight far over the capacity the server has shown
		started.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			if !hot(func() { started.Done(); <-hold }, 0) {
				started.Done()
			}
		}()
	}
	started.Wait()
	for range 100 {
		hot(none, 1)
	}
	refused := 0
	if n := testing.AllocsPerRun(1000, func() {
		if !hot(none, 0) {
			refused++
		}
	}); n != 0 {
		t.Errorf("hot and full: %v allocations a call, want 0", n)
	}
	close(hold)
	finished.Wait()
	if refused == 0 {
		t.Fatal("no refusal on a hot, full server: the refusal path was not run")
	}
}
