package stripe

import "unsafe"

// Counter is an int64 counter kept once per P, each copy on its own cache line: Add is a pinned
// plain add (about 2.5 ns, no atomic read-modify-write) and Load sums the copies. A Load racing an
// Add may miss it; if GOMAXPROCS grows after NewCounter, Ps share copies and an Add can be lost.
// Used for refusal counts and call sampling, which must cost a few nanoseconds.
type Counter struct {
	words []int64
	mask  int
}

// NewCounter returns a zero counter with Count() copies.
func NewCounter() Counter {
	n := Count()
	return Counter{words: make([]int64, (n+2)*Words)[Words : (n+1)*Words], mask: n - 1}
}

// Add adds d to the calling P's copy and returns that copy's new value (not the total).
func (c *Counter) Add(d int64) int64 {
	w := c.word(Pin())
	Add(w, d)
	v := Load(w)
	Unpin()
	return v
}

// Inc adds one to the calling P's copy: a refusal's count, as cheap as a count gets. It is not
// inlined (Pin and Unpin are calls); a caller on the hottest path writes the three lines itself,
// with [Counter.Word].
func (c *Counter) Inc() {
	Add(c.word(Pin()), 1)
	Unpin()
}

// Word returns P p's copy, p as Pin returned it: for a caller that pins and adds itself.
func (c *Counter) Word(p int) *int64 { return c.word(p) }

// word returns P p's copy. p is masked, so the address is inside words by construction and is
// computed without a bounds check: nothing between Pin and Unpin may panic.
func (c *Counter) word(p int) *int64 {
	return (*int64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(c.words)), (p&c.mask)*CacheLine))
}

// Load returns the sum of every copy.
func (c *Counter) Load() int64 {
	var s int64
	for i := 0; i <= c.mask; i++ {
		s += Load(&c.words[i*Words])
	}
	return s
}
