package wardredis

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/wardgo/ward/rate"
)

// entry is what this process keeps for one key: its lease and its fallback limiter.
type entry struct {
	mu    sync.Mutex
	left  int   // leased tokens not handed out yet
	until int64 // local instant the leased tokens expire at
	start int64 // the period the leased tokens belong to (a period limiter)
	asked bool  // a lease was asked before
	last  int64 // local instant the last lease was asked at
	used  int   // tokens handed out since then
	shut  int64 // local instant before which the store is known to refuse a call of one token
	shutP int64 // the period of that refusal (a period limiter)
	fb    *rate.BucketLimiter
}

// newEntry returns an entry with no lease and no refusal standing, at any instant of the clock,
// before its origin too.
func newEntry() *entry { return &entry{until: math.MinInt64, shut: math.MinInt64} }

// hand answers a call of one token at now locally if it can: a leased token that has not
// expired, or a refusal while the store's last refusal still stands.
func (e *entry) hand(now int64) (Decision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.left <= 0 || now >= e.until {
		if now < e.shut {
			return Decision{Wait: time.Duration(e.shut - now), By: Lease, Start: e.shutP}, true
		}
		return Decision{}, false
	}
	e.left--
	e.used++
	return Decision{OK: true, By: Lease, Start: e.start}, true
}

// ask returns how many tokens to ask the store for at now: what the tokens handed out since the
// last ask come to over a lease's life, in [1, most]. The first ask is for one.
func (e *entry) ask(now int64, life time.Duration, most int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 1
	if e.asked {
		if elapsed := now - e.last; elapsed <= 0 {
			n = most
		} else {
			n = int(min(math.Ceil(float64(e.used)*float64(life)/float64(elapsed)), float64(most)))
		}
	}
	e.asked, e.last, e.used = true, now, 0
	return max(n, 1)
}

// fill keeps the tokens a lease granted beyond the one its caller takes, until sent (the local
// instant the lease was asked at) plus the lease's life, and never past the end of the period
// they belong to. Tokens of another period are dropped; two leases kept together expire at the
// earlier deadline; a lease of an earlier period than the live one's, answered late, keeps
// nothing. So a token is handed out at most once, only while it is valid, and labelled with the
// period it counts in.
func (e *entry) fill(sent int64, d Decision, life time.Duration) {
	deadline := sent + int64(life)
	if d.reset > 0 {
		deadline = min(deadline, sent+int64(d.reset))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.used++
	if d.granted <= 1 {
		return
	}
	live := e.left > 0 && sent < e.until
	if live && d.Start < e.start {
		return
	}
	if !live || e.start != d.Start {
		e.left, e.until = 0, deadline
	}
	e.left += d.granted - 1
	e.until = min(e.until, deadline)
	e.start = d.Start
}

// refuse remembers a refusal of the store: a call of one token asked at sent and refused with
// wait cannot pass before sent + wait (the store decided no earlier than sent, and nothing but a
// release brings a token sooner), so calls until then are refused here. A refusal answered
// late, after a lease was granted, leaves that lease and its period alone.
func (e *entry) refuse(sent int64, d Decision) {
	if d.Wait <= 0 || d.Wait == rate.Forever {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if until := sent + int64(d.Wait); until > e.shut {
		e.shut, e.shutP = until, d.Start
	}
}

// giveBack returns a token to the lease if it is still valid at now.
func (e *entry) giveBack(now int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now >= e.until {
		return false
	}
	e.shut = math.MinInt64
	e.left++
	e.used--
	return true
}

// fallback returns the key's local limiter, made on first use.
func (e *entry) fallback(l *Limiter) *rate.BucketLimiter {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fb == nil {
		e.fb, _ = l.fb() // checked when the limiter was made
	}
	return e.fb
}

// table holds the entries of at most about cap keys, in shards of a mutex and two maps: keys of
// at most longKey bytes under themselves, longer keys under a 128-bit digest of them, so that an
// entry costs the same bounded memory whatever its key's length. A shard at its share of cap
// drops a key to make room (a long one first, else one at random, a map's order): that key's
// lease is lost (its tokens wasted, never given twice) and its fallback starts full.
type table struct {
	seed   [2]maphash.Seed
	per    int
	shards [64]shard
}

// longKey is the longest key kept as it is; a longer one is kept under its digest.
const longKey = 64

type shard struct {
	mu   sync.Mutex
	m    map[string]*entry
	long map[[2]uint64]*entry
	_    [40]byte // a shard per cache line
}

func (t *table) init(keys int) {
	t.seed = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	t.per = max(1, (keys+len(t.shards)-1)/len(t.shards))
	for i := range t.shards {
		t.shards[i].m = make(map[string]*entry)
		t.shards[i].long = make(map[[2]uint64]*entry)
	}
}

// get returns key's entry, or nil when the limiter keeps nothing per key (no lease, no
// fallback).
func (t *table) get(l *Limiter, key string) *entry {
	if l.cfg.leaseMax == 0 && l.cfg.failure != Fallback {
		return nil
	}
	h := maphash.String(t.seed[0], key)
	s := &t.shards[h%uint64(len(t.shards))]
	var d [2]uint64
	if len(key) > longKey {
		d = [2]uint64{h, maphash.String(t.seed[1], key)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var e *entry
	if len(key) > longKey {
		e = s.long[d]
	} else {
		e = s.m[key]
	}
	if e != nil {
		return e
	}
	if len(s.m)+len(s.long) >= t.per {
		s.evict()
	}
	e = newEntry()
	if len(key) > longKey {
		s.long[d] = e
	} else {
		s.m[key] = e
	}
	return e
}

// evict drops one key of the shard: a long one if it holds any, else one at random.
func (s *shard) evict() {
	for k := range s.long {
		delete(s.long, k)
		return
	}
	for k := range s.m {
		delete(s.m, k)
		return
	}
}

// Key is one key of a [Limiter], with the library's contract: Now, Allow, Do, and the
// rate.Permit methods, so it can be a link of a rate.Chained. It keeps its lease and fallback
// state itself. Safe for concurrent use.
type Key struct {
	l    *Limiter
	key  string
	rkey string
	e    *entry
}

// Key returns the handle of key.
func (l *Limiter) Key(key string) *Key {
	return &Key{l: l, key: key, rkey: l.prefix + key, e: l.keys.get(l, key)}
}

// Now returns the limiter's clock: [Limiter.Now].
func (k *Key) Now() int64 { return k.l.Now() }

// Allow takes one token at the limiter's clock, bounded by the timeout.
func (k *Key) Allow() bool {
	d, _ := k.l.take(context.Background(), "", k.rkey, k.e, 1)
	return d.OK
}

// Do is [Limiter.Do] for this key.
func (k *Key) Do(ctx context.Context, fn func(context.Context) error) error {
	d, _ := k.l.take(ctx, "", k.rkey, k.e, 1)
	return k.l.do(ctx, d, fn)
}

// Acquire takes one token: the rate.Permit method. It decides at the limiter's clock whatever
// now says, since a Chained or a Partitioned passes instants of its caller's clock, which the
// fleet does not share.
func (k *Key) Acquire(int64) bool { return k.Allow() }

// Release gives one token back: the rate.Permit method; [Limiter.Release].
func (k *Key) Release(int64) {
	ctx, cancel := context.WithTimeout(context.Background(), k.l.cfg.timeout)
	defer cancel()
	_ = k.l.release(ctx, "", k.rkey, k.e)
}
