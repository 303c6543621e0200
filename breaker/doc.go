// Package breaker is a client-side circuit breaker with two answers: Google SRE client-side
// throttling, which refuses a share of calls in proportion to a backend's failures, and a trip,
// which refuses all but a few spaced probes to a backend that answers nothing, and lets traffic
// back as soon as a probe succeeds.
//
// # Two layers
//
// [Core] is the pure arithmetic: deterministic, the clock and the draw passed in, not safe for
// concurrent use. [Breaker] is the concurrent type: outcomes in a per-P striped window, the drop
// ratio folded from it and cached, a per-P draw, no lock and no allocation on any call.
// Driven from one goroutine with [WithRefresh](0), an injected clock and an injected draw, a
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
// # Presets
//
//   - [DefaultPolicy], what [New] uses: both answers, numbers below.
//   - [GoZeroPolicy]: go-zero's core/breaker/googlebreaker.go (v1.10.3) exactly, decision for
//     decision: throttling only, a probe a second, recovery over the 10 s window.
//   - [RecoveryPolicy]: go-zero's numbers with the recovery scaling over 1 s of buckets with no
//     failure.
//
// # How the default reasons
//
// Two kinds of fault call for opposite answers. A backend failing a share of its calls (30%,
// 60%, or timing out half of them) still serves the rest: cutting it off loses those calls, so
// the breaker throttles in proportion (the SRE arithmetic, go-zero's numbers). A backend that
// answers nothing (connection refused, every call a 5xx) serves nothing: every call sent is
// wasted, so the breaker trips and sends only probes; a recovered backend is found by the next
// probe and gets its traffic back at once, without waiting for the history of the outage to age
// out of the window.
//
// The throttle. With accepts successes out of total calls (refusals included) in the window,
// failing and working the runs at its head of buckets with only failures and of working buckets:
//
//	w     = max(K − (K − KFloor) · failing / Buckets, KFloor)
//	drop  = (total − Protection − w · accepts) / (total + 1)
//	drop ×= max(R − working, 0) / R       R: Recovery in buckets (Buckets when Recovery is 0)
//
// K is the SRE book's 2 (go-zero has 1.5): a backend is left alone until more than half its
// calls fail, so one failing 30% of calls, or timing out half of them, keeps all its traffic and
// serves what it can, where go-zero's 1.5 throttles the second hard. The decay of K to 1.1 over
// a run of failing buckets, Protection 5 and 40 buckets over 10 s are go-zero's. A bucket is working
// when it holds successes and at most Tolerance (a quarter) of its outcomes are failures: a
// healthy backend's ordinary errors (a few percent) do not count against its recovery, where
// go-zero's arithmetic restarts the recovery at every failure. Recovery is one bucket (250 ms):
// the throttle lifts in the first working bucket, since a working bucket is the evidence the
// SRE arithmetic lacks while old failures fill its window.
//
// The trip. Ten failures (Trip) in buckets with no success between them (a tenth of a second of
// a dead backend at 100 calls a second; a 250 ms bucket of 25 calls with no success is three in
// a million for a backend failing 60%) make the ratio 1: every call is refused but a probe, one call
// every 500 ms (ProbeAfter), so a dead backend receives two calls a second (2% of 100 calls a
// second, 0.5% of 400). The first success a probe brings back ends the trip: the failures of the
// run that tripped it leave the tally and, as refusals while tripped are not recorded, nothing of
// the outage holds the throttle up; the probe's bucket is a working one. A recovered backend thus
// waits for the next probe, 250 ms on average and 500 ms at most (another 500 ms when the probe
// meets one of its background errors), and is then served in full. A flapping backend is
// tripped within a bucket of going down and served within a probe of coming back up.
//
// In the simulator (sim.FaultScenarios, 100 calls a second, 2% background errors) the default
// sends a dead backend at most 2% of the calls
// offered after its first 2 s, refuses well under 5% of the calls in the 10 s after it recovers,
// none later than 2 s after, and under partial failure serves at least what go-zero's breaker and
// gobreaker serve.
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
//   - A refusal is recorded as a Drop (except while tripped: see Policy.Trip) at the time of the latest clock reading a settle made (the
//     refusal itself reads no clock; see [Breaker]). Successes and failures are recorded at the
//     instant they settle. [Breaker.Now] reads the clock the breaker decides by.
//   - The probe fires for one goroutine at a time: concurrent callers race a compare-and-set on
//     the last pass, and one wins.
//   - ProbeAfter = 0 disables the probe. K must be at least KFloor; KFloor must be positive. The
//     names say what each is: ProbeAfter is a duration, KFloor the floor of K (package shed's
//     MinShare is a different floor).
//   - A draw outside [0, 1) is held into it: NaN and negatives count as 0 (refused whenever the
//     ratio is positive), 1 and over as just under 1 (never refused but while tripped: the ratio
//     is under 1 otherwise).
//   - While tripped with ProbeAfter 0, or with probes so rare that fewer than Trip failures stay
//     in the window, the trip lasts until its failures age out of the window; the throttle then
//     decides, and ten more failures trip it again.
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
