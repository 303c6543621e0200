// Package ward is admission control for the hot path of high-QPS servers: should this call go
// ahead? Its packages answer in nanoseconds, without locks on the per-call paths and without
// allocations, under any number of goroutines. This root package holds the one contract they all
// keep, so that a server learns it once.
//
// # The contract
//
// Two layers. Every package has a pure core (deterministic: the clock and the random draws are
// arguments) and a concurrent type that reads its own clock and draws; driven from one goroutine
// with an injected clock and draw, the concurrent type gives exactly its core's decisions.
//
// One clock. Every concurrent type has Now(), the instant its short forms (Allow, Acquire, Do)
// decide at: nanoseconds of ward's monotonic clock, or of the one given WithClock. Every …At(now,
// …) form takes an instant of that same clock. An instant far from it (a Unix time passed by
// mistake) is read as the clock jumping, never wedges the type shut and never opens it wide.
//
// One settle vocabulary. An admission that learns from outcomes returns a [Handle], settled with
// Pass (success), Fail (overload or failure: what moves limits and ratios) or Ignore (neutral: the
// caller's own error or cancellation, which frees the slot and records nothing). Settling the same
// variable twice is a no-op.
//
// One Do. Every concurrent type has Do(ctx, fn), with one classification of fn's error: nil is a
// success; context.Canceled while ctx is done (the caller gave up) is neutral;
// context.DeadlineExceeded is an overload; an error a WithFailure predicate accepts is an
// overload; an error a WithOwnError predicate accepts (not found, validation) settles as the
// package says below; any other error settles as the package says below. A panicking fn settles
// as a failure and the panic continues. Do returns fn's error unchanged.
//
// One refusal shape. Every refusal matches [ErrRefused] and its package's own sentinel with
// errors.Is; a refusal that knows when the call would pass carries the wait ([RetryAfter]).
// Refusals allocate nothing, except that a Do refusal carrying a wait allocates one small value.
// retry.Do does not retry a ward refusal unless it carries a wait.
//
// One configuration shape. Policies are plain structs validated at construction; options are
// func(*config) error, validated when applied; a nil option or a nil function is an error; every
// configuration error matches [ErrInvalid] and its package's ErrInvalid, and names the field.
// Constructors never hold bad configuration into range; run-time inputs (draws, instants, CPU
// readings) are held into range as each package documents.
//
// # The types
//
// Every concurrent type, cell by cell (a test in this package walks the table: the compile-time
// assertions that each is a [Guard] or a [Handle], and a behavioural check per row):
//
//	type                  short forms              …At forms                                       Now  Do                 handle: verbs                     refusal (wait?)                   own error / other error
//	adaptive.Limiter      Acquire, Do              (pure layer: Core.Acquire(now), Ticket.*(now))  yes  Do(ctx, fn)        Lease: Pass, Fail, Ignore         adaptive.ErrLimitExceeded (no)    Ignore / Ignore
//	breaker.Breaker       Allow, Do                (pure layer: Core.Allow(now, roll), Record)     yes  Do(ctx, fn)        Promise: Pass, Fail, Ignore       breaker.ErrUnavailable (no)       Pass / Fail
//	shed.Shedder          Allow, Do                (pure layer: Core.Allow(now, cpu), Ticket.*)    yes  Do(ctx, fn)        Promise: Pass, Fail, Ignore       shed.ErrOverloaded (no)           Pass / Fail
//	rate.BucketLimiter    Allow, Do                TakeAt(now, n), Next, Left, Acquire, Release    yes  Do(ctx, fn)        none: nothing to settle           rate.ErrLimited (yes)             fn's error returned
//	rate.SlidingLimiter   Allow, Do                TakeAt(now, n), Next, Left, Acquire, Release    yes  Do(ctx, fn)        none                              rate.ErrLimited (yes)             fn's error returned
//	rate.PeriodLimiter    Allow, Do                TakeAt(now, n), TakeQuota, Next, Left, Reset    yes  Do(ctx, fn)        none                              rate.ErrLimited (yes)             fn's error returned
//	failurewindow.Window  Admit(key), Record(key)  AdmitAt(key, now), RecordAt(key, now)           yes  Do(ctx, key, fn)   none: a failure is a Record       failurewindow.ErrTooManyFailures  nothing / Record(key)
//	                                                                                                                                                          (yes)
//	pool.Pool             Acquire(ctx), Release,   (pure layer: Core.Take(now, roll), Give, …)     yes  none: Acquire      the resource: Release, Destroy    pool.ErrRefused (when the ward    —
//	                      Destroy                                                                        blocks            (broken)                          says Later)
//
// "own error" is an error a WithOwnError predicate accepts (not found, validation: the caller's,
// not the backend's); "other error" is any other non-nil error that is neither the caller's own
// cancellation (Ignore everywhere) nor a deadline or a WithFailure match (Fail everywhere). The
// pure layers take every instant as an argument and never read a clock.
//
// # Where to start
//
// A server guarding one backend: [github.com/wardgo/ward/adaptive] in front of it (how many calls at
// once), [github.com/wardgo/ward/breaker] around each call (is the backend failing),
// [github.com/wardgo/ward/shed] at the door (is this process overloaded),
// [github.com/wardgo/ward/rate] per client (quotas), [github.com/wardgo/ward/failurewindow] per
// address (failed logins), [github.com/wardgo/ward/retry] when a call may be tried again,
// [github.com/wardgo/ward/pool] for the connections themselves, and
// [github.com/wardgo/ward/wardhttp] to put any of them in front of a net/http handler or behind an
// http.Client; gRPC interceptors, Prometheus and OpenTelemetry metrics and shared quotas on Redis
// are nested modules under contrib/. [github.com/wardgo/ward/sim] drives the limiters, the breaker
// and the shedder through simulated overloads.
package ward
