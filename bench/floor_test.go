package bench

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wardgo/ward/internal/stripe"
)

// TestFloors: every floor names a comparison of the suite and probes that exist, with a target;
// every probe admits, and moves what it says it moves.
func TestFloors(t *testing.T) {
	probes := map[string]bool{}
	for _, i := range FloorProbes.Impls {
		probes[i.Name] = true
		call := i.New()
		worked := 0
		for range 100 {
			if !call(func() { worked++ }, Success) {
				t.Fatalf("probe %s refused", i.Name)
			}
		}
		if worked != 100 || i.Note == "" {
			t.Fatalf("probe %s: the work ran %d times of 100, note %q", i.Name, worked, i.Note)
		}
	}
	comps := map[string]bool{}
	for _, c := range All {
		comps[c.Name] = true
	}
	for name, f := range Floors {
		if comp, row, own := strings.Cut(name, "/"); own { // a row's own floor: a row the comparison's floor names
			if !comps[comp] || !slices.Contains(Floors[comp].Also, row) || len(f.Also) != 0 {
				t.Errorf("floor of %s: %s has no floor naming row %s, or the row's floor names rows", name, comp, row)
			}
		} else if !comps[name] {
			t.Errorf("floor of %s: no such comparison", name)
		}
		if f.Target <= 0 || f.Why == "" || len(f.Parts) == 0 || f.Parts[0] != (Part{"call", 1}) {
			t.Errorf("floor of %s: target %v, why %q, parts %v (the call first, once)", name, f.Target, f.Why, f.Parts)
		}
		for _, also := range f.Also {
			for _, c := range All {
				if c.Name == name {
					impl(c, also) // panics if the comparison has no such row
				}
			}
		}
		for _, p := range f.Parts {
			if !probes[p.Op] || !(p.Times > 0) {
				t.Errorf("floor of %s: part %v has no probe or no share", name, p)
			}
		}
	}
	for name := range Refusals {
		if _, ok := Floors[name]; !ok {
			t.Errorf("refusal %s has no floor", name)
		}
	}
	before := floorWord.n.Load()
	impl(&FloorProbes, "cas").New()(None, Success)
	impl(&FloorProbes, "add").New()(None, Success)
	if got := floorWord.n.Load() - before; got != 2 {
		t.Fatalf("cas and add probes moved the word by %d, want 2", got)
	}
}

// TestPinnedSectionsCallOut: the least pinned section does not inline (the pin and the unpin
// are calls of the runtime's, and two calls cost more than the inliner's budget), which is why
// the admit and settle probes count in the floor of a path that pins when it admits or when it
// settles: a caller reaches each pinned section through a call of its own. And the section
// writes its P's row (at the run's GOMAXPROCS the table has a row for every P).
func TestPinnedSectionsCallOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m=2")
	}
	if !stripe.Pinned {
		t.Skip("a build without the runtime's pin (ward_nolinkname, or not gc): its rows are picked at random, with no call")
	}
	sum := func() (n int64) {
		for w := range floorTable.All() {
			n += stripe.Load((*int64)(w))
		}
		return n
	}
	before := sum()
	floorPinned(floorTable)
	if got := sum() - before; got != 1 {
		t.Fatalf("the pinned section added %d, want 1", got)
	}
	out, err := exec.Command("go", "build", "-gcflags=-m=2", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m=2: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`cannot inline floorPinned: function too complex`).Match(out) {
		t.Fatalf("floorPinned inlines, or the compiler said nothing of it:\n%s", regexp.MustCompile(`(?m)^.*floorPinned.*$`).FindAll(out, -1))
	}
}
