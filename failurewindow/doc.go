// Package failurewindow counts failures per key — failed logins per client address — in a sliding
// window, concurrently, in bounded memory, so that a flood of fresh addresses can never wash out
// the address that is actually guessing passwords.
//
//	w, err := failurewindow.New(5, 15*time.Minute) // 5 failures per 15 minutes per address
//	if ok, retryAfter := w.Admit(addr); !ok {
//		return tooManyAttempts(retryAfter) // the next request after retryAfter will pass
//	}
//	if !checkPassword(user, password) {
//		w.Record(addr)
//	}
//
// or, with the one Do every ward type has:
//
//	err := w.Do(ctx, addr, func(ctx context.Context) error { return login(ctx, user, password) })
//	if wait, ok := ward.RetryAfter(err); ok { // a refusal: ErrTooManyFailures, matching ward.ErrRefused
//		return tooManyAttempts(wait)
//	}
//
// [Core] is the same table as pure arithmetic: instants are arguments, the eviction's draws come
// from a roll given to [NewCore], and a Window driven from one goroutine gives its answers.
//
// Admit decides on entry; Record counts the outcome when it is known. Requests admitted
// concurrently below the limit may take the count past it, by no more than the number admitted at
// once: that is the price of counting outcomes rather than attempts, and the wait a refused key is
// told accounts for it (only the newest limit stamps are kept, and the oldest of them decides).
//
// A Window is a per-key guard, not an admission handle: nothing is held between Admit and Record,
// so there is no Pass, Fail or Ignore to call. [Window.Do] records a failure for a deadline, an
// error [WithFailure] accepts, and any error that is not the caller's own; a success, the caller's
// cancellation and an error [WithOwnError] accepts (no such user, a malformed request) record
// nothing; a panic is recorded and continues.
//
// A Window is a ward.Counter: [Window.Counts] returns the requests Admit admitted and refused and
// the failures reported, plus, for the calls made through Do, the successes and the neutral
// outcomes; each count is a plain add on the calling P's own cache line.
//
// # Edge cases
//
//   - One clock: [Window.Now] is the instant Admit, Record and Do decide at, ward's monotonic
//     clock or the one given [WithClock]; AdmitAt and RecordAt take instants of that clock.
//   - A stamp more than a window later than the instant of a call that reads it (Admit, Record,
//     a sweep) cannot come from the recent past of the same clock: it was stamped on another
//     origin (a Unix time passed to RecordAt) or before the clock jumped back. It is pulled back
//     to that call's instant, with every stamp of the key later than it, and so stays in the
//     window for exactly one more window of the clock in use: the key is neither refused for
//     decades nor let through early, and none of its failures is lost. A stamp up to a window
//     later (instants read out of order by concurrent callers) is left as it is.
//   - A call at an instant far later than the stamps (a Unix time passed to AdmitAt or RecordAt
//     on a Window whose clock started near 0) reads as the clock jumping ahead, as a long idle
//     spell would: for that call, every failure is out of the window. AdmitAt writes nothing but a
//     pull-back, so the next Admit on the clock still refuses; RecordAt drops what that instant
//     finds expired of that key's own failures. Mixing origins is a mistake the Window survives,
//     not one it can undo: give every …At call an instant of [Window.Now]'s clock.
//   - An instant touches only the key it is given with. Sweeps and evictions, which look at other
//     keys, read the Window's own clock: no instant handed to one key, of any origin, expires,
//     pulls back or evicts another key's failures, so an offender at its limit stays refused.
//   - A failure recorded at an instant before the key's newest stamp is stamped at that newest
//     stamp: stamps stay ascending and no failure leaves the window sooner than an earlier one.
//   - A refused key's wait is more than zero and never more than the window, for any instants,
//     the ends of int64 included (differences are taken in uint64, where int64 would wrap).
//   - Keys longer than [MaxKeyLen] (128 bytes) are replaced by a 128-bit digest under two
//     per-Window random seeds: no error, no allocation to look one up, and no collision an outsider
//     can aim at.
//   - The table is 256 shards, each on cache lines of its own: a mutex that writers (Record, the
//     eviction probe, the sweep) hold, a dense array of entries that the eviction probe samples
//     uniformly by rejection, and an index that Admit reads without any lock. The index is open
//     addressing over groups of seven entry pointers and a control word on one cache line; the
//     control word holds seven bits of each slot's hash, so a lookup compares them all at once
//     and dereferences only the entries that match (an unknown key usually costs one line).
//     Writers change it by single atomic stores (an entry into an empty slot and then its control
//     byte, a tombstone for a deletion, a fresh array published whole when it fills); each shard's
//     array and its size are published together, immutable, behind one pointer in a dense array
//     of heads that readers keep cached, so a reader loads one word to find them. Each entry
//     holds its key's bytes right after the words it publishes for Admit (is it at its limit,
//     its oldest and newest stamp: atomic words under a sequence number), in one allocation, so
//     a lookup reads the key and the stamps at addresses it knows once it has the entry, with no
//     pointer to follow; a reader that catches a write under way, or a key whose stamps need a
//     pull-back, judges under the shard's lock instead. Admit of a known key judged without the
//     lock hashes it once and writes no shared word (its count goes to its P's own row), so
//     readers on different cores never pass a cache line back and forth; Admit of an unknown key
//     does not read the clock. A key is hashed 16 bytes at a time under three 64-bit keys drawn
//     at New (each pair of words multiplied into 128 bits and folded, as wyhash does), so that
//     where a key lands can be neither foreseen nor aimed at from outside; a key whose hash
//     matches is compared in full, a word at a time.
//   - The index is ward's own rather than xsync's MapOf: a general map costs several times the
//     index's bytes per key, and gives only the lookup (its Range is no uniform random probe, so
//     the dense array and the shard lock would stay, and the entry's stamps would still need
//     publishing for lock-free reading). The figures of that comparison are in the README.
//   - A sweep (dropping expired stamps and empty keys) runs inside Record when the stored count has
//     doubled since the last sweep or a window has passed since it (a last sweep more than a
//     window later than now counts as due); [Window.Sweep] runs one on demand. An eviction probe
//     also drops the expired stamps of the key it looks at.
//   - Configuration errors match [ErrInvalid] and ward.ErrInvalid and name the parameter or
//     option: a zero or negative limit or window, a limit over [MaxStoredFailures], a nil option,
//     clock or predicate.
//   - Memory: each stored failure costs its stamp, a share of its entry (which holds the
//     table's own copy of its key: the caller's strings are not kept) and of the index; README
//     gives the measured bytes per stored failure and for a full table.
package failurewindow
