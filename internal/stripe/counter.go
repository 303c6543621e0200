package stripe

// Counter is an int64 counter kept once per P in a [Table], each copy on its own cache line: Add
// is a pinned add into the P's own copy (about 2.5 ns, no atomic read-modify-write on a shared
// line) and Load sums the copies. It loses no update, whatever GOMAXPROCS does; a Load racing an
// Add may or may not see it. Used for refusal counts and call sampling, which must cost a few
// nanoseconds. Init it before use; it must not be copied after.
type Counter struct{ t Table }

// Init makes the per-P copies.
func (c *Counter) Init() { c.t.Init(1) }

// Add adds d to the calling P's copy and returns that copy's new value (not the total).
func (c *Counter) Add(d int64) int64 {
	w := (*int64)(c.t.Pin())
	Add(w, d)
	v := Load(w)
	Unpin()
	return v
}

// Inc adds one to the calling P's copy: a refusal's count, as cheap as a count gets.
func (c *Counter) Inc() {
	r := c.t.Current()
	if w := r.Row(PinRow(r)); w != nil {
		Add((*int64)(w), 1)
		Unpin()
		return
	}
	Unpin()
	Add((*int64)(c.t.Pin()), 1)
	Unpin()
}

// Load returns the sum of every copy.
func (c *Counter) Load() int64 {
	var s int64
	for row := range c.t.All() {
		s += Load((*int64)(row))
	}
	return s
}
