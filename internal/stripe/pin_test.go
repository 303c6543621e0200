package stripe

import "testing"

func TestPinInRange(t *testing.T) {
	n := Count()
	for i := 0; i < 100; i++ {
		p := Pin()
		Unpin()
		if p < 0 {
			t.Fatalf("Pin() = %d", p)
		}
		_ = p & (n - 1)
	}
}

func TestRoundUp(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {1, Words}, {Words, Words}, {Words + 1, 2 * Words}} {
		if got := RoundUp(c[0]); got != c[1] {
			t.Errorf("RoundUp(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

func TestOps(t *testing.T) {
	var x int64
	Store(&x, 5)
	Add(&x, 3)
	if Load(&x) != 8 {
		t.Fatalf("Load = %d, want 8", Load(&x))
	}
}

// BenchmarkPin measures Pin+Unpin, the floor under every striped write.
func BenchmarkPin(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Pin()
			Unpin()
		}
	})
}

func TestCounter(t *testing.T) {
	c := NewCounter()
	for i := 0; i < 100; i++ {
		c.Add(2)
	}
	if got := c.Load(); got != 200 {
		t.Fatalf("Load = %d, want 200", got)
	}
	if a := testing.AllocsPerRun(100, func() { c.Add(1) }); a != 0 {
		t.Fatalf("Add allocates %v", a)
	}
}

func BenchmarkCounterAdd(b *testing.B) {
	c := NewCounter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
}
