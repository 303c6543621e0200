package swin

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// inlined are the functions whose doc says they are small enough to inline: a caller's pinned
// section makes no call for them.
var inlined = []string{"Rows", "At", "Counter", "FreshAt", "FreshCounter"}

// TestInline: each of inlined inlines in the build a user's program gets on a 64-bit target (go
// build, no tags); an edit that grows one past the compiler's budget fails here, with the
// compiler's reason.
func TestInline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m=2")
	}
	if strconv.IntSize < 64 {
		t.Skip("a 32-bit target's stripe words are atomic, not plain (see stripe.Plain)")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m=2", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m=2: %v\n%s", err, out)
	}
	for _, fn := range inlined {
		if !regexp.MustCompile(`: can inline \(\*Window\)\.` + fn + ` with cost`).Match(out) {
			t.Errorf("(*Window).%s does not inline: %s", fn, regexp.MustCompile(`cannot inline \(\*Window\)\.`+fn+`:[^\n]*`).Find(out))
		}
	}
}
