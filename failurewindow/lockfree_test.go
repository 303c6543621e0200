package failurewindow

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestLockFreeReads: Admit, reading without the lock, sees every key at its limit refused with
// the exact wait and every other key admitted while writers churn the same shards: a flood of
// fresh keys evicting each other (index deletions and rebuilds), the offenders recorded again
// (their rings rewritten), and sweeps. Bounded loops; -race checks the publication.
func TestLockFreeReads(t *testing.T) {
	const limit, offenders, readers, rounds = 3, 64, 4, 3000
	w, _ := New(limit, time.Minute, WithClock(func() int64 { return 0 }))
	w.max = offenders*limit + 256 // room for a few hundred fresh keys: evictions from the start
	bad := make([]string, offenders)
	for i := range bad {
		bad[i] = fmt.Sprintf("198.51.100.%d", i)
		for k := 0; k < limit; k++ {
			w.RecordAt(bad[i], 0)
		}
	}
	fresh := make([]string, 4096)
	for i := range fresh {
		fresh[i] = fmt.Sprintf("2001:db8::%x", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	stop := make(chan struct{})
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if ok, wait := w.AdmitAt(bad[(i+r)%offenders], sec); ok || wait != time.Minute-time.Second {
					errs <- fmt.Errorf("offender %d admitted %v, wait %v; want refused, 59s", (i+r)%offenders, ok, wait)
					return
				}
				if ok, _ := w.AdmitAt(fresh[(i*7+r)%len(fresh)], sec); !ok {
					errs <- fmt.Errorf("fresh key %d refused", (i*7+r)%len(fresh))
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for g := 0; g < 2; g++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < rounds; i++ {
				w.RecordAt(fresh[(i*2+g)%len(fresh)], 0)
				if i%16 == 0 {
					w.RecordAt(bad[i%offenders], 0)
				}
				if g == 0 && i%500 == 0 {
					w.sweep(0)
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := w.Snapshot(); s.Evictions == 0 || s.Stored > w.max {
		t.Fatalf("snapshot %+v: want evictions and at most %d stored", s, w.max)
	}
}

// TestIndexShrinks: a sweep that empties a shard drops its index, and one that leaves a few keys
// of many rebuilds it small; lookups stay right across both.
func TestIndexShrinks(t *testing.T) {
	now := int64(0)
	w, _ := New(2, time.Second, WithClock(func() int64 { return now }))
	for i := 0; i < 20000; i++ {
		w.RecordAt(fmt.Sprintf("k%d", i), 0)
	}
	w.RecordAt("stays", int64(1500*time.Millisecond))
	w.RecordAt("stays", int64(1500*time.Millisecond))
	now = int64(2 * time.Second)
	w.Sweep()
	if n := w.Len(); n != 1 {
		t.Fatalf("%d keys after the sweep, want 1", n)
	}
	for k := range w.shards {
		s := &w.shards[k]
		if a := s.groups; a != nil && len(a) != 1 {
			t.Fatalf("shard %d keeps an index of %d groups for %d keys", k, len(a), len(s.entries))
		}
	}
	if ok, _ := w.AdmitAt("stays", now); ok {
		t.Fatal("the key left after the sweep is admitted at its limit")
	}
	if ok, _ := w.AdmitAt("k7", now); !ok {
		t.Fatal("a swept key is refused")
	}
}

// TestViewIsOnePublication: a shard's view is the array last published and its mask, as one
// pair; a reader still holding the array a rebuild replaced finds in it what it held, the same
// entries the new array holds, and Admit answers the same across the rebuild.
func TestViewIsOnePublication(t *testing.T) {
	w, _ := New(2, time.Second, WithClock(func() int64 { return 0 }))
	w.RecordAt("a", 0)
	w.RecordAt("a", 0)
	var buf [16]byte
	key := w.form("a", &buf)
	h := hashOf(&w.keying, key)
	s := &w.shards[h%shards]
	old, oldMask := s.head.view()
	if old != &s.groups[0] || oldMask != uint64(len(s.groups)-1) {
		t.Fatalf("view %p/%d, want the published array %p/%d", old, oldMask, &s.groups[0], len(s.groups)-1)
	}
	want, wantWait := w.AdmitAt("a", 10)
	s.mu.Lock()
	s.rebuild(64) // a larger array, published whole
	s.mu.Unlock()
	base, mask := s.head.view()
	if base == old || base != &s.groups[0] || mask != uint64(len(s.groups)-1) || mask == oldMask {
		t.Fatalf("after the rebuild: view %p/%d, groups %p/%d, old %p/%d", base, mask, &s.groups[0], len(s.groups)-1, old, oldMask)
	}
	e, _ := findAt(&w.keying, base, mask, key)
	if old, _ := findAt(&w.keying, old, oldMask, key); e == nil || old != e {
		t.Fatal("the old array and the new one do not hold the same entry")
	}
	if got, gotWait := w.AdmitAt("a", 10); got != want || gotWait != wantWait || got {
		t.Fatalf("after the rebuild: %v %v, want %v %v (refused)", got, gotWait, want, wantWait)
	}
	s.mu.Lock()
	s.publish(nil)
	s.mu.Unlock()
	if e, _ = w.find(&w.heads, key); e != nil {
		t.Fatalf("no index: found %v", e)
	}
	if base, mask := s.head.view(); base != noIndex.base || mask != 0 {
		t.Fatalf("no index: view %p/%d, want the empty group %p/0 where nothing is found", base, mask, noIndex.base)
	}
}

// TestControlWord: matches and empties answer, for every slot of a group, exactly what a loop
// over the control bytes answers, for control words mixing empty, matching and other bytes.
func TestControlWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100_000; i++ {
		fp := fingerprint(rng.Uint64())
		c := uint64(ctrlPad)
		for k := 0; k < groupSlots; k++ {
			var b uint64
			switch rng.IntN(4) {
			case 0: // empty
			case 1:
				b = fp
			case 2:
				b = fp ^ 1<<rng.IntN(7) // one bit off
			default:
				b = fingerprint(rng.Uint64())
			}
			c |= b << (slotBits * k)
		}
		var wantM, wantE uint64
		for k := 0; k < groupSlots; k++ {
			b := c >> (slotBits * k) & 0xff
			if b == fp {
				wantM |= 0x80 << (slotBits * k)
			}
			if b == 0 {
				wantE |= 0x80 << (slotBits * k)
			}
		}
		if m, e := matches(c, fp), empties(c); m != wantM || e != wantE {
			t.Fatalf("control %#x, fingerprint %#x: matches %#x empties %#x, want %#x %#x", c, fp, m, e, wantM, wantE)
		}
	}
}
