package failurewindow

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAllocs: AdmitAt of a known key, brought as a copy of its own (as a request brings it),
// allocates nothing in a package shaped as a user's, and a key at its limit is refused.
func TestAllocs(t *testing.T) {
	keys, copies := make([]string, 64), make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("2001:db8::%x", i)
		copies[i] = strings.Clone(keys[i])
	}
	admit, err := Known(keys, 5, time.Minute, int64(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		if !admit(copies[i&63]) {
			t.Fatal("a key under its limit refused")
		}
		i++
	}); n != 0 {
		t.Errorf("%v allocations an AdmitAt, want 0", n)
	}
	full, err := Known(keys, 1, time.Minute, int64(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if full(copies[0]) {
		t.Fatal("a key at its limit of 1 admitted within the window")
	}
}

// TestFailingAllocs: Failing's call allocates nothing, admits a key below its limit and runs the
// work, and refuses a key at its limit without running it.
func TestFailingAllocs(t *testing.T) {
	call, err := Failing("203.0.113.7", 4, 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	worked := 0
	work := func() { worked++ } // made once: a closure passed to a func value escapes
	if n := testing.AllocsPerRun(1000, func() {
		if !call(work, 0) {
			t.Fatal("a key with 2 of its 4 failures refused")
		}
	}); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
	if worked == 0 {
		t.Fatal("the work never ran")
	}
	full, err := Failing("203.0.113.7", 4, 4, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if full(func() { t.Fatal("the work ran for a refused key") }, 0) {
		t.Fatal("a key at its limit admitted")
	}
}
