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

// TestAdmitWhilePublishing: a reader that finds its shard's index being published (or published
// again between its loads) judges under the lock, with the same answers.
func TestAdmitWhilePublishing(t *testing.T) {
	now := int64(0)
	w, _ := New(2, time.Second, WithClock(func() int64 { return now }))
	w.RecordAt("a", 0)
	w.RecordAt("a", 0)
	w.RecordAt("b", 0)
	for _, key := range []string{"a", "b", "c"} {
		var buf [16]byte
		_, h := w.storedForm(key, &buf)
		s := &w.shards[h%shards]
		want, wantWait := w.AdmitAt(key, 10)
		hd := s.head
		m := hd.meta.Load()
		hd.meta.Store(m | 1) // a publication under way
		if _, _, ok := hd.view(); ok {
			t.Fatal("view is consistent while an index is being published")
		}
		got, gotWait := w.AdmitAt(key, 10)
		hd.meta.Store(m + 1<<7) // published again, the same index
		if got != want || gotWait != wantWait {
			t.Fatalf("%s while publishing: %v %v, want %v %v", key, got, gotWait, want, wantWait)
		}
		if _, _, ok := hd.view(); !ok {
			t.Fatal("view is not consistent once published")
		}
	}
	if ok, _ := w.AdmitAt("a", 10); ok {
		t.Fatal("a key at its limit is admitted")
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
