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
// Admit decides on entry and writes nothing; Record counts the outcome when it is known. Requests
// admitted concurrently below the limit may take the count past it, by no more than the number
// admitted at once: that is the price of counting outcomes rather than attempts, and the wait a
// refused key is told accounts for it (only the newest limit stamps are kept, and the oldest of
// them decides).
//
// # Behaviour at the edges
//
//   - Keys longer than [MaxKeyLen] (128 bytes) are replaced by a 128-bit digest under two
//     per-Window random seeds: no error, no allocation to look one up, and no collision an outsider
//     can aim at.
//   - A failure recorded at an instant before the key's newest stamp is stamped at that newest
//     stamp: stamps stay ascending and no failure leaves the window sooner than an earlier one.
//     Stamps from the future (a clock that went backwards) count as in the window; the wait is
//     held to [0, window].
//   - The table is 256 shards of a map under a mutex: Admit holds one shard's lock for a lookup.
//     xsync's maps were left out on purpose (their Range is no random probe, and the project keeps
//     xsync off per-request paths); the eviction probe samples keys uniformly by rejection over the
//     shards' dense entry arrays.
//   - A sweep (dropping expired stamps and empty keys) runs inside Record when the stored count has
//     doubled since the last sweep or a window has passed since it; [Window.Sweep] runs one on
//     demand. An eviction probe also drops the expired stamps of the key it looks at.
//   - Memory at the bound, measured by TestSimMemory (39-character IPv6 keys, one failure each,
//     Go 1.26, amd64): about 165 B per stored failure, 41 MiB for a full table, against the
//     spec's 170 B. The figure counts the table's own copy of every key; the caller's strings
//     are not in it.
package failurewindow
