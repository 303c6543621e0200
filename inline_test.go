package ward_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHotPathsInline: the functions the code says are small enough to inline do inline in the
// build a user's program gets on a 64-bit target (go build, no tags): each is written to fit the
// compiler's budget so that a hot path makes no call for it, and an edit that grows one past it
// fails here. A 32-bit target splits each 64-bit word's operations (and its stripe words are
// atomic), which the budget does not fit.
func TestHotPathsInline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the packages with -gcflags=-m")
	}
	if strconv.IntSize < 64 {
		t.Skip("a 32-bit target: 64-bit words cost more than the inlining budget holds")
	}
	want := map[string][]string{ // package: functions, as the compiler names them
		"./adaptive":          {"(*Lease).settle", "(*Partition).settled", "(*Limiter).freed"},
		"./rate":              {"(*BucketLimiter).collided"},
		"./internal/contract": {"Settle"},
		"./internal/clock":    {"Count", "Uncount", "Counted", "(*Coarse).Load"},
	}
	args := []string{"build", "-gcflags=-m"}
	for pkg := range want {
		args = append(args, pkg)
	}
	cmd := exec.Command("go", args...) // the toolchain make test runs with
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	can := map[string]bool{} // "file dir: function"
	for _, line := range strings.Split(string(out), "\n") {
		_, fn, ok := strings.Cut(line, ": can inline ")
		if !ok {
			continue
		}
		fn, _, _ = strings.Cut(fn, " ")
		can[filepath.Dir(strings.SplitN(line, ":", 2)[0])+" "+fn] = true
	}
	for pkg, fns := range want {
		for _, fn := range fns {
			if !can[strings.TrimPrefix(pkg, "./")+" "+fn] {
				t.Errorf("%s: %s does not inline", pkg, fn)
			}
		}
	}
}
