package failurewindow

import (
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// Core is the failure table's pure arithmetic: a [Window] without the clock, the locks and the
// lock-free index. Instants are arguments (nanoseconds from any monotonic origin) and the
// eviction's draws come from the roll given to [NewCore], so the same calls with the same draws
// give the same answers: an hour of traffic is a loop over now, and a test replays it exactly. It
// is deterministic, not safe for concurrent use, and a copy shares its table with the original;
// build one with [NewCore].
//
// It keeps the Window's rules to the letter: the same admissions and waits, the same pull-back of
// stamps from a far future, at most [MaxStoredFailures] stamps, a key at its limit never evicted,
// the same sweeps. Driven from one goroutine with an injected clock, a Window gives exactly a
// Core's answers, evictions included, when its eviction probes the keys the Core's draws choose.
// The Core numbers its keys 0 to Len − 1 (in the order they came, the last moved into a forgotten
// key's place) and probes ⌊roll·Len⌋; the Window draws a shard and a place in it instead (see
// [WithRand]), which is as uniform over the keys but names them in another order.
//
// The Window judges other keys than the one it is given (in sweeps and evictions) on its own
// clock, never on an instant handed to one key. The Core has no clock: [Core.RecordAt] takes both
// instants, the failure's and the table's, and [Core.Record] is the common case where they are
// one. Give the table's instants from one clock, as a Window reads its own.
//
// Admit, and Record of a key at its limit, allocate nothing. Keys longer than [MaxKeyLen] are
// stored as a 128-bit digest under two seeds drawn by NewCore, as a Window stores them; no answer
// depends on the seeds unless two long keys share a digest, which no outsider can aim at.
type Core struct {
	rules
	keying
	roll      func() float64
	max       int64 // MaxStoredFailures; lowered only by tests
	stored    int64
	evictions int64
	uncounted int64
	lastSweep int64
	swept     int64 // stamps stored right after the last sweep
	index     map[string]*entry
	entries   []*entry // the keys, numbered for the eviction's draws
}

// NewCore returns an empty table of at most limit failures per key within window, whose first
// sweep is due a window after now; roll draws the eviction's probes, each in [0, 1) (a draw
// outside it, NaN included, is held into it). As for [New], zero or negative parameters and a
// limit above [MaxStoredFailures] are errors naming the parameter, and so is a nil roll.
func NewCore(limit int, window time.Duration, now int64, roll func() float64) (*Core, error) {
	if err := validate(limit, window); err != nil {
		return nil, err
	}
	if roll == nil {
		return nil, contract.Field(ErrInvalid, "roll", "nil", "a function")
	}
	return &Core{rules: rules{limit: limit, window: int64(window)}, keying: newKeying(), roll: roll,
		max: MaxStoredFailures, lastSweep: now, index: make(map[string]*entry)}, nil
}

// Limit returns the failures within the window at which a key is refused.
func (c *Core) Limit() int { return c.limit }

// Window returns the window's length.
func (c *Core) Window() time.Duration { return time.Duration(c.window) }

// Admit reports whether key may go ahead at now, judged by the failures already counted; if not,
// retryAfter is how long until the window holds limit − 1 of its failures, so the next request
// would pass: more than zero and at most the window. It touches no other key and writes nothing
// but a pull-back of the key's stamps from more than a window after now.
func (c *Core) Admit(key string, now int64) (ok bool, retryAfter time.Duration) {
	var buf [16]byte
	e := c.index[c.form(key, &buf)]
	if e == nil {
		return true, 0
	}
	return c.judge(e, now)
}

// Record counts one failure of key at now, the table's instant: RecordAt(key, now, now).
func (c *Core) Record(key string, now int64) { c.RecordAt(key, now, now) }

// RecordAt counts one failure of key at at, judging every other key at now, the table's instant:
// a sweep runs when one is due at both, and a failure with no room evicts a key below its limit
// as its stamps stand at now. An at earlier than the key's newest stamp is stamped at that newest
// stamp; a newest stamp more than a window later than at is first pulled back to at.
func (c *Core) RecordAt(key string, at, now int64) {
	var buf [16]byte
	key = c.form(key, &buf)
	if c.due(at) && c.due(now) {
		c.Sweep(now)
	}
	if done, _ := c.try(key, at, false); done {
		return
	}
	if !c.evict(now) {
		c.uncounted++
		return
	}
	if _, used := c.try(key, at, true); !used { // the key reached its limit in the eviction
		c.stored--
	}
}

func (c *Core) due(now int64) bool { return c.sweepDue(c.lastSweep, c.swept, c.stored, now) }

// try stores the failure if there is room for it (reserved: the caller holds room for one stamp),
// or if the key is at its limit, which needs none. done is false when the table is full; used
// says whether room was taken.
func (c *Core) try(key string, now int64, reserved bool) (done, used bool) {
	if e := c.index[key]; e != nil {
		d, at := c.prepare(e, now)
		c.stored -= int64(d)
		if c.full(e) {
			e.rotate(at)
			return true, false
		}
		if !reserved && !c.reserve() {
			return false, false
		}
		push(e, at, c.limit)
		return true, true
	}
	if !reserved && !c.reserve() {
		return false, false
	}
	e := newEntry(key, 0, now)
	c.index[e.key()] = e
	c.entries = append(c.entries, e)
	return true, true
}

func (c *Core) reserve() bool {
	if c.stored >= c.max {
		return false
	}
	c.stored++
	return true
}

// evict probes up to evictionProbes keys, key ⌊roll·Len⌋ each, and forgets the first one below the
// limit, judged at now; it leaves room for one stamp reserved for the caller.
func (c *Core) evict(now int64) bool {
	for probes := 0; probes < evictionProbes && len(c.entries) > 0; probes++ {
		j := int(pick(c.roll(), int64(len(c.entries))))
		freed, forget, evicted := c.probe(c.entries[j], now)
		if !forget {
			c.stored -= freed
			continue
		}
		if evicted {
			c.evictions++
		}
		c.remove(j)
		if freed == 0 {
			continue
		}
		c.stored -= freed - 1
		return true
	}
	return false
}

// remove forgets key j, moving the last key into its place.
func (c *Core) remove(j int) {
	last := len(c.entries) - 1
	delete(c.index, c.entries[j].key())
	c.entries[j] = c.entries[last]
	c.entries[last] = nil
	c.entries = c.entries[:last]
}

// Sweep drops every stamp out of the window at now and every key left with none. RecordAt runs
// one on its own when the table has doubled or a window has passed since the last sweep.
func (c *Core) Sweep(now int64) {
	for i := 0; i < len(c.entries); {
		e := c.entries[i]
		c.stored -= int64(c.expire(e, now))
		if e.n == 0 {
			c.remove(i)
			continue
		}
		i++
	}
	if len(c.entries) < cap(c.entries)/4 { // give the room back, the index's too
		c.entries = append([]*entry(nil), c.entries...)
		index := make(map[string]*entry, len(c.entries))
		for _, e := range c.entries {
			index[e.key()] = e
		}
		c.index = index
	}
	c.lastSweep, c.swept = now, c.stored
}

// Len returns how many keys are stored.
func (c *Core) Len() int { return len(c.entries) }

// Snapshot returns the table's state.
func (c *Core) Snapshot() Snapshot {
	return Snapshot{Keys: len(c.entries), Stored: c.stored, Evictions: c.evictions, Uncounted: c.uncounted}
}
