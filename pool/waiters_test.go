package pool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardgo/ward"
)

// settled checks, under the pool's lock, that no caller is counted as waiting and no grant is
// left in hand's buffer: every grant sent was received by a caller.
func (p *Pool[T]) settled(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.b.h.gate.Load() &^ closedBit; n != 0 {
		t.Fatalf("%d callers counted as waiting, want none", n)
	}
	if n := len(p.b.hand); n != 0 {
		t.Fatalf("%d grants left unreceived, want none", n)
	}
}

// heldPool returns a pool of one resource, lent.
func heldPool(t *testing.T) (*counts, *Pool[*res], Loan[*res]) {
	t.Helper()
	c := &counts{}
	p := newPool(t, c, limits(1, 1, 0, 0))
	held, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c, p, held
}

// Waiters are served in the order they began to wait; Close refuses the ones left.
func TestPoolWaitOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, p, held := heldPool(t)
		const n = 6
		type result struct {
			k   int
			l   Loan[*res]
			err error
		}
		got := make(chan result, n)
		for k := range n {
			go func() {
				l, err := p.Acquire(context.Background())
				got <- result{k, l, err}
			}()
			synctest.Wait() // waiter k is receiving before waiter k+1 starts
		}
		if st := p.Stats(); st.Waiting != n {
			t.Fatalf("Stats = %+v, want %d waiting", st, n)
		}
		for want := range n / 2 { // the first half, by Releases handed on one at a time
			held.Release()
			r := <-got
			if r.k != want || r.err != nil {
				t.Fatalf("handoff %d went to waiter %d (err %v), want waiter %d", want, r.k, r.err, want)
			}
			held = r.l
		}
		p.Close() // the rest, refused
		for range n - n/2 {
			if r := <-got; r.k < n/2 || r.err != ErrClosed {
				t.Fatalf("waiter %d: %v, want ErrClosed", r.k, r.err)
			}
		}
		held.Release()
		p.settled(t)
		checkClosed(t, c)
	})
}

// A caller that gives up while a grant is owed to every waiter (claimed, not yet sent) receives
// one and passes it on: a resource to the idle set, uncounted, and a refusal dropped.
func TestPoolOwedGrantPassedOn(t *testing.T) {
	for _, lend := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			c, p, held := heldPool(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { _, err := p.Acquire(ctx); done <- err }()
			synctest.Wait()
			if !p.b.claim() { // as a Release about to hand it the resource does
				t.Fatal("no waiter to claim")
			}
			cancel()
			synctest.Wait() // the waiter found no waiter left to uncount: it waits for its grant
			if lend {       // what giveBack does after its claim
				w := held.w + genStep
				if !p.b.slots[held.i].word.CompareAndSwap(held.w, w) {
					t.Fatal("the held loan's word moved")
				}
				p.b.hand <- grant{w: w, i: held.i}
			} else {
				p.b.hand <- refusal(0)
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire = %v, want context.Canceled", err)
			}
			st, cn := p.Stats(), p.Counts()
			wantIdle := 0
			if lend {
				wantIdle = 1
			} else {
				held.Release()
			}
			if st.Idle != wantIdle || st.Lent != 1-wantIdle || cn.Abandoned != 1 || cn.Passed != 0 || cn.Refused != 0 {
				t.Fatalf("lend %v: Stats %+v, Counts %+v: want %d idle, one abandoned, none passed or refused", lend, st, cn, wantIdle)
			}
			p.settled(t)
			held.Release() // a loan that has ended: nothing
			p.Close()
			checkClosed(t, c)
		})
	}
}

// Close refuses every caller waiting, also those counted that have not begun to receive (their
// refusals wait in hand's buffer), and leaves no grant behind.
func TestPoolCloseRefusesEveryWaiter(t *testing.T) {
	c, p, held := heldPool(t)
	const n = 3 * maxBuffered // more than the buffer holds
	done := make(chan error, n)
	for range n {
		go func() { _, err := p.Acquire(context.Background()); done <- err }()
	}
	waitFor(t, "callers waiting", func() bool { return p.Stats().Waiting == n })
	p.Close()
	for range n {
		if err := <-done; err != ErrClosed {
			t.Fatalf("Acquire = %v, want ErrClosed", err)
		}
	}
	p.settled(t)
	held.Release()
	checkClosed(t, c)
}

// A Release that finds a caller waiting hands the resource on unless it is past Life (then it is
// closed and a new one opened for the waiter); a resource handed on rests from when it next turns
// idle, not from a handoff.
func TestPoolHandOnAges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keep, life = 10 * time.Second, 40 * time.Second
		clk := &fakeClock{}
		c := &counts{}
		p := newPool(t, c, limits(1, 1, keep, life), WithClock(clk.Now))
		bg := context.Background()
		// wait has a caller wait, lets l go with give, and returns what the caller got.
		wait := func(give func()) Loan[*res] {
			got := make(chan Loan[*res])
			go func() {
				l, err := p.Acquire(bg)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			synctest.Wait()
			give()
			return <-got
		}
		a, _ := p.Acquire(bg) // born at 0
		clk.now.Store(int64(15 * time.Second))
		b := wait(a.Release) // handed on at 15 s, within Life
		if b.Value() != a.Value() {
			t.Fatal("a resource within Life was not handed on")
		}
		clk.now.Store(int64(19 * time.Second))
		b.Release() // idle from 19 s
		clk.now.Store(int64(19*time.Second + keep - 1))
		d, _ := p.Acquire(bg) // idle just under Keep: lent
		if d.Value() != a.Value() {
			t.Fatal("a resource idle under Keep since it turned idle was not lent")
		}
		clk.now.Store(int64(life + 1))
		e := wait(d.Release) // past Life: closed, and a new one opened for the waiter
		if e.Value() == a.Value() || a.Value().closed.Load() != 1 {
			t.Fatalf("a resource past Life was handed on (closed %d times)", a.Value().closed.Load())
		}
		e.Release()
		p.Close()
		p.settled(t)
		checkClosed(t, c)
	})
}

// Releases that hand resources to callers counted as waiting, but not yet receiving, fill hand's
// buffer and then wait for a receiver; every grant reaches one caller, and nothing is lost.
func TestPoolHandoffBeyondBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = maxBuffered + 2
		c := &counts{}
		p := newPool(t, c, limits(size, size, 0, 0))
		held := make([]Loan[*res], size)
		for k := range held {
			l, err := p.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			held[k] = l
		}
		p.mu.Lock()
		p.b.h.gate.Add(size) // size callers counted that have not begun to receive
		p.mu.Unlock()
		released := make(chan struct{})
		go func() {
			for _, l := range held {
				l.Release()
			}
			close(released)
		}()
		synctest.Wait() // the buffer is full and a Release waits for a receiver
		if n, st := len(p.b.hand), p.Stats(); n != maxBuffered || st.Waiting != size-maxBuffered-1 {
			t.Fatalf("%d grants buffered, Stats %+v: want %d buffered and %d waiting unserved", n, st, maxBuffered, size-maxBuffered-1)
		}
		seen := map[*res]bool{}
		for k := range held { // the callers receive: each a resource of its own
			g := <-p.b.hand
			held[k] = p.loan(g.i, g.w)
			if g.kind != grantLent || seen[held[k].Value()] {
				t.Fatalf("grant %+v: want a resource not handed before", g)
			}
			seen[held[k].Value()] = true
		}
		<-released
		p.settled(t)
		if st := p.Stats(); st.Lent != size || st.Idle != 0 {
			t.Fatalf("Stats %+v: want all %d lent", st, size)
		}
		for _, l := range held {
			l.Release()
		}
		p.Close()
		checkClosed(t, c)
	})
}

// A Release that finds a caller waiting hands its resource on without the pool's lock.
func TestPoolHandoffTakesNoLock(t *testing.T) {
	c, p, held := heldPool(t)
	got := make(chan Loan[*res], 1)
	go func() {
		l, err := p.Acquire(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitFor(t, "a caller waiting", func() bool { return p.Stats().Waiting == 1 })
	p.mu.Lock()
	go held.Release()
	waitFor(t, "the resource handed on while the lock is held", func() bool { return len(got) == 1 })
	p.mu.Unlock()
	l := <-got
	if l.Value() != held.Value() {
		t.Fatal("the waiter was not handed the released resource")
	}
	l.Release()
	p.Close()
	p.settled(t)
	checkClosed(t, c)
}

// A caller that gives up when a grant is owed to every caller counted (its claim fails), and
// whose grant a caller counted after that takes first, leaves as soon as that caller is counted:
// it does not wait for the next resource released, which the other caller holds.
func TestPoolLeaverNotHeldByLaterCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, p, held := heldPool(t)
		p.mu.Lock()
		p.b.h.gate.Add(1) // the leaver, counted as first counts it
		p.mu.Unlock()
		if !p.b.claim() { // a Release about to hand it the resource
			t.Fatal("no waiter to claim")
		}
		if p.b.claim() { // the leaver's context ends: it cannot uncount itself
			t.Fatal("a claim with every caller counted owed a grant")
		}
		w := held.w + genStep // the Release hands the resource on, before the leaver receives
		if !p.b.slots[held.i].word.CompareAndSwap(held.w, w) {
			t.Fatal("the held loan's word moved")
		}
		p.b.hand <- grant{w: w, i: held.i}
		later, err := p.Acquire(context.Background()) // counted now, it receives first
		if err != nil || later.Value() != held.Value() {
			t.Fatalf("Acquire = %v, %v: want the resource handed on", later.Value(), err)
		}
		left := make(chan grant)
		go func() { left <- p.b.leave() }()
		synctest.Wait()
		select {
		case g := <-left:
			if g.kind != grantLeft {
				t.Fatalf("leave = %+v, want grantLeft", g)
			}
		default:
			later.Release() // what the leaver waits for
			<-left
			t.Fatal("the caller that gave up waits for the resource the later caller holds")
		}
		later.Release()
		p.settled(t)
		if st := p.Stats(); st.Idle != 1 || st.Lent != 0 {
			t.Fatalf("Stats %+v: want the resource idle", st)
		}
		p.Close()
		checkClosed(t, c)
	})
}

// The first caller to wait, when serving finds an idle resource past its age, closes it (which
// takes the lock again after) only once it is no longer a caller counted and unserved: it has
// received the grant sent to it first. A send made under the lock to a full buffer may wait for
// such a caller, so one that took the lock before receiving could hold up the pool for ever.
func TestPoolFirstReceivesBeforeClosing(t *testing.T) {
	clk := &fakeClock{}
	var p *Pool[*res]
	var made []*res
	closes, handAtClose, gateAtClose := 0, -1, int64(-1)
	open := func(context.Context) (*res, error) {
		r := &res{id: len(made) + 1}
		made = append(made, r)
		return r, nil
	}
	closeRes := func(r *res) {
		r.closed.Add(1)
		if closes++; closes == 1 {
			handAtClose, gateAtClose = len(p.b.hand), p.b.h.gate.Load()
		}
	}
	// A shedder in the ward: every Acquire takes the lock, and the first to wait serves.
	p, err := New(open, closeRes, limits(2, 2, 0, 10*time.Second),
		WithClock(clk.Now), WithWard(Ward{Shedder: &fakeShedder{}}))
	if err != nil {
		t.Fatal(err)
	}
	old, err := p.Acquire(context.Background()) // born at 0
	if err != nil {
		t.Fatal(err)
	}
	clk.now.Store(int64(5 * time.Second))
	young, err := p.Acquire(context.Background()) // born at 5s
	if err != nil {
		t.Fatal(err)
	}
	young.Release()
	old.Release()                          // on top of the idle stack
	clk.now.Store(int64(12 * time.Second)) // the old one is past Life, the young one is not
	l, err := p.Acquire(context.Background())
	switch {
	case err != nil:
		t.Fatal(err)
	case l.Value() != young.Value():
		t.Fatalf("lent resource %d, want the young one (%d)", l.Value().id, young.Value().id)
	case closes != 1 || old.Value().closed.Load() != 1:
		t.Fatalf("%d closes, the old resource closed %d times: want it closed once", closes, old.Value().closed.Load())
	case handAtClose != 0 || gateAtClose != 0:
		t.Fatalf("closing with %d grants unreceived and %d callers counted, want none", handAtClose, gateAtClose)
	}
	l.Release()
	p.settled(t)
	p.Close()
}

// A caller that gave up while a grant was owed to every caller counted waits to leave, and leaves
// as soon as another caller is counted (that caller's count stands for it), before the owed grant
// is sent: the grant then goes to the caller counted.
func TestPoolLeaverWokenByNextCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, p, held := heldPool(t)
		ctx, cancel := context.WithCancel(context.Background())
		left := make(chan error, 1)
		go func() { _, err := p.Acquire(ctx); left <- err }()
		synctest.Wait()
		if !p.b.claim() { // a Release about to hand it the resource
			t.Fatal("no waiter to claim")
		}
		cancel()
		synctest.Wait() // it cannot uncount itself: it waits to leave
		select {
		case err := <-left:
			t.Fatalf("Acquire = %v before a grant or another caller came", err)
		default:
		}
		type result struct {
			l   Loan[*res]
			err error
		}
		next := make(chan result, 1)
		go func() { l, err := p.Acquire(context.Background()); next <- result{l, err} }()
		synctest.Wait()
		select {
		case err := <-left:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire = %v, want context.Canceled", err)
			}
		default:
			t.Fatal("the caller that gave up still waits after the next caller was counted")
		}
		w := held.w + genStep // the Release hands the resource on
		if !p.b.slots[held.i].word.CompareAndSwap(held.w, w) {
			t.Fatal("the held loan's word moved")
		}
		p.b.hand <- grant{w: w, i: held.i}
		r := <-next
		if r.err != nil || r.l.Value() != held.Value() {
			t.Fatalf("next Acquire = %v, %v: want the resource handed on", r.l.Value(), r.err)
		}
		r.l.Release()
		p.settled(t)
		if st, cn := p.Stats(), p.Counts(); st.Idle != 1 || st.Lent != 0 || cn.Abandoned != 1 {
			t.Fatalf("Stats %+v, Counts %+v: want the resource idle and one caller abandoned", st, cn)
		}
		p.Close()
		checkClosed(t, c)
	})
}

// Two callers that gave up while a grant was owed to every caller counted both leave once two
// more callers are counted, though the second of those finds the first's wake-up still pending
// and wakes no one: the leaver woken takes one count and wakes the other, which takes the second.
func TestPoolTwoLeaversOneWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, p, held := heldPool(t)
		ctx, cancel := context.WithCancel(context.Background())
		left := make(chan error, 2)
		for range 2 {
			go func() { _, err := p.Acquire(ctx); left <- err }()
			synctest.Wait()
		}
		for range 2 { // Releases about to hand each its resource
			if !p.b.claim() {
				t.Fatal("no waiter to claim")
			}
		}
		cancel()
		synctest.Wait() // neither can uncount itself: both wait to leave
		if n := p.b.h.left.Load(); n != 2 || len(left) != 0 {
			t.Fatalf("%d callers waiting to leave, %d returned: want 2 waiting, none returned", n, len(left))
		}
		p.mu.Lock()
		// Two callers counted, the second after the first's wake-up and before a leaver took it:
		// the second's finds it pending, so one wake-up is sent in all.
		p.b.h.gate.Add(2)
		p.mu.Unlock()
		p.b.wake()
		synctest.Wait()
		for range 2 {
			select {
			case err := <-left:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Acquire = %v, want context.Canceled", err)
				}
			default:
				t.Fatal("a caller that gave up still waits with a count it could take")
			}
		}
		// The grants owed go to the two callers counted, whose part the test plays.
		w := held.w + genStep
		if !p.b.slots[held.i].word.CompareAndSwap(held.w, w) {
			t.Fatal("the held loan's word moved")
		}
		p.b.hand <- grant{w: w, i: held.i} // a buffer of one grant: each received before the next
		if g := <-p.b.hand; g.kind != grantLent || g.i != held.i {
			t.Fatalf("first grant %+v, want the resource handed on", g)
		}
		p.b.hand <- refusal(0)
		<-p.b.hand
		p.loan(held.i, w).Release()
		p.settled(t)
		if n := p.b.h.left.Load(); n != 0 {
			t.Fatalf("%d callers counted as waiting to leave, want none", n)
		}
		if st := p.Stats(); st.Idle != 1 || st.Lent != 0 {
			t.Fatalf("Stats %+v: want the resource idle", st)
		}
		p.Close()
		checkClosed(t, c)
	})
}

// A ward's refusal under the lock reaches every caller waiting, more of them than hand's buffer
// holds (one grant, with Size 1): the sends wait for receivers, none of which needs the lock.
func TestPoolRefuseAllBeyondBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{}
		c := &counts{}
		p := newPool(t, c, limits(1, 1, 0, 0), WithClock(clk.Now),
			WithWard(Ward{Bucket: &fakeBucket{interval: int64(time.Second)}}))
		held, err := p.Acquire(context.Background()) // takes the bucket's token
		if err != nil {
			t.Fatal(err)
		}
		const n = 5
		got := make(chan error, n)
		for range n {
			go func() { _, err := p.Acquire(context.Background()); got <- err }()
		}
		synctest.Wait()
		if st := p.Stats(); st.Waiting != n || cap(p.b.hand) != 1 {
			t.Fatalf("Stats %+v, buffer %d: want %d waiting on a buffer of one", st, cap(p.b.hand), n)
		}
		held.Destroy() // room to make, and the bucket says Later: every caller refused, under the lock
		for range n {
			err := <-got
			if wait, ok := ward.RetryAfter(err); !errors.Is(err, ErrRefused) || !ok || wait != time.Second {
				t.Fatalf("Acquire = %v (wait %v), want ErrRefused with a second's wait", err, wait)
			}
		}
		p.settled(t)
		if cn := p.Counts(); cn.Refused != n {
			t.Fatalf("Counts %+v, want %d refused", cn, n)
		}
		p.Close()
		checkClosed(t, c)
	})
}
