// Package breaker is Google SRE client-side throttling: a circuit breaker with no open, half-open
// and closed. It keeps ten seconds of outcomes and refuses each call with a probability that grows
// with the failures, so a struggling backend keeps receiving what it can still serve instead of
// being cut off and then flooded on recovery.
//
// # Two layers
//
// [Core] is the pure arithmetic (the numbers are go-zero's
// core/breaker/googlebreaker.go, v1.10.3): deterministic, the clock and the draw passed in, not
// safe for concurrent use. [Breaker] is the concurrent type: outcomes in a per-P striped window,
// the drop ratio folded from it and cached, a per-thread draw, no lock and no allocation on any
// call. Driven from one goroutine with [WithRefresh](0), an injected clock and an injected draw, a
// Breaker gives exactly the Core's decisions.
//
//	b, _ := breaker.New(breaker.WithOwnError(isNotFound))
//	err := b.Do(ctx, callBackend)
//	if errors.Is(err, breaker.ErrUnavailable) {
//		return serveFromCache()
//	}
//
// Do settles the call by fn's error, as every ward type's Do does: nil and the errors
// [WithOwnError] accepts (a not found, a validation error: the backend answered) are successes;
// the caller's own cancellation is ignored (the backend never answered, so it says nothing about
// it); context.DeadlineExceeded, the errors [WithFailure] accepts and any other error are
// failures; a panic is a failure and continues. By hand, [Breaker.Allow] returns a [Promise] to
// settle with Pass, Fail or Ignore.
//
// With accepts successes out of total calls (refusals included) in the window, failing and
// working the runs at its head of buckets with only failures and only successes:
//
//	w     = max(K − (K − KFloor) · failing / Buckets, KFloor)
//	drop  = (total − Protection − w · accepts) / (total + 1)
//	drop ×= (Buckets − working) / Buckets
//
// At the preset's K = 1.5 a backend is left alone until more than a third of its calls fail (a
// backend failing 20% of calls is never throttled); after an outage, each bucket of successes
// without failures scales the ratio down by a fortieth, so it is back to 0 about ten seconds after
// recovery (10.5 s in TestRecoveryRun, 11 s in the simulator's seeded run: buckets where the draw
// let no call through neither extend nor break the run).
//
// # Recovery
//
// The preset keeps the SRE arithmetic: after an outage the window is full of failures, and the
// ratio falls only as the successes of a working backend push them out, over most of the 10 s
// window. [RecoveryPolicy] (Policy.Recovery 1 s) brings the ratio to zero within 1 s of buckets
// that only succeeded: in the simulator it refuses 3.6–9.3% of the calls in the 10 s after a
// 10 s outage where the preset refuses 40–52%, and it sends a dead backend exactly the calls the
// preset sends (a dead backend has no bucket that only succeeded, so the scaling never starts).
// Use it when a backend's recovery is usually whole, as a restarted process's is; keep the preset
// when a backend tends to flap.
//
// # Events
//
// [WithEvents] tells a function when the breaker starts or stops refusing. The fold that refreshes
// the cached ratio tells it, at most once per refresh interval: no call's decision pays for it.
//
//	b, _ := breaker.New(breaker.WithEvents(func(e breaker.Event) {
//		slog.Info("breaker", "refusing", e.Refusing, "ratio", e.Ratio)
//	}))
//
// # Edge cases
//
//   - A refusal is recorded as a Drop at the time of the latest clock reading a settle made (the
//     refusal itself reads no clock; see [Breaker]). Successes and failures are recorded at the
//     instant they settle. [Breaker.Now] reads the clock the breaker decides by.
//   - The probe fires for one goroutine at a time: concurrent callers race a compare-and-set on
//     the last pass, and one wins.
//   - ProbeAfter = 0 disables the probe. K must be at least KFloor; KFloor must be positive. The
//     names say what each is: ProbeAfter is a duration, KFloor the floor of K (package shed's
//     MinShare is a different floor).
//   - A draw outside [0, 1) is held into it: NaN and negatives count as 0 (refused whenever the
//     ratio is positive), 1 and over as just under 1 (never refused: the ratio is always under 1).
//   - A clock that moves backwards by less than a window writes into the newest bucket and reads
//     as of it ([atomicwindow]): it never rewrites history.
//   - A clock that jumps back by more than a window (or that once returned a far-future instant,
//     such as a Unix time given by mistake) is read as the clock having jumped: the window
//     restarts empty at the new instant, and the latest reading, the refresh due and the last
//     pass are pulled back to it. The breaker then behaves as a new one would: it neither
//     refuses a healthy backend for years nor stops refusing a failing one. A Breaker has no
//     …At forms: every instant comes from its clock.
//   - An outcome that is neither Success, Failure nor Drop is ignored by [Core.Record].
//   - Settling a [Promise] twice through the same variable is a no-op; Ignore records nothing (a
//     breaker holds no slot, so there is nothing to free). [Nop] returns a breaker that admits
//     everything and records nothing, behind the same methods.
//   - A nil Option, and a nil clock, draw source or predicate given to an option, are errors
//     matching [ErrInvalid] that name the option.
package breaker
