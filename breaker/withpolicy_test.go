package breaker

import (
	"errors"
	"testing"
)

// TestWithPolicyValidatesWhenApplied: an invalid policy is an error of the option itself, naming
// the field, before New sees it; a valid one is kept.
func TestWithPolicyValidatesWhenApplied(t *testing.T) {
	bad := DefaultPolicy()
	bad.Window = -1
	var c config
	if err := WithPolicy(bad)(&c); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WithPolicy(bad) applied: %v, want ErrInvalid", err)
	}
	if err := WithPolicy(DefaultPolicy())(&c); err != nil || c.policy != DefaultPolicy() {
		t.Fatalf("WithPolicy(default) applied: %v, policy %+v", err, c.policy)
	}
}
