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
// One admission. Every guard is a [Guard]: Admit(ctx) decides whether a call may go ahead and
// returns an [Admission], or a refusal, or ctx's own error when ctx is already done (having spent
// nothing). The Admission is settled once, when the call ends: Pass (success), Fail (overload or
// failure: what moves limits and ratios), Ignore (neutral: the caller's own error or
// cancellation, which frees the slot and records nothing), or End(ctx, err), which classifies err
// as the guard's Do would. Settling the same variable twice is a no-op. Admitting and settling
// allocate nothing. Each package keeps its own typed handle too (adaptive.Lease, breaker.Promise,
// shed.Promise), settled with the same three verbs, and the pure layers settle with the same
// [Outcome]: Settle(now, o) on adaptive's and shed's Ticket and on breaker's Core. Integrations are written once on Guard:
// wardhttp.Guard for net/http, the gRPC interceptors, [With] for composition, [Get] for a call
// that returns a result. A guard of your own implements Guard (and [Settler] behind its
// admissions) and goes wherever ward's go.
//
// One Do. Every guard has Do(ctx, fn), with one classification of fn's error: nil is a success;
// context.Canceled while ctx is done (the caller gave up) is neutral; context.DeadlineExceeded
// is an overload; an error a WithFailure predicate accepts is an overload; an error a
// WithOwnError predicate accepts (not found, validation) settles as the package says below; any
// other error settles as the package says below. A panicking fn settles as a failure and the
// panic continues. Do returns fn's error unchanged.
//
// One refusal shape. Every refusal matches [ErrRefused] and its package's own sentinel with
// errors.Is; a quota (the caller has had its share) matches [ErrQuota] too; a refusal that knows
// when the call would pass carries the wait ([RetryAfter]). Refusals allocate nothing, except
// that a refusal carrying a wait allocates one small value. retry.Do does not retry a ward
// refusal unless it carries a wait.
//
// One configuration shape. Policies are plain structs validated at construction; options are
// func(*config) error, validated when applied; a nil option or a nil function is an error; every
// configuration error matches [ErrInvalid] and its package's ErrInvalid, and names the field.
// Constructors never hold bad configuration into range; run-time inputs (draws, instants, CPU
// readings) are held into range as each package documents.
//
// # The types
//
// Every concurrent type, cell by cell (the tests of this package walk the table). How each
// admits, what settles it, and how it refuses:
//
//	type                  admits              settled by                    refusal (wait known?)
//	adaptive.Limiter      Admit, Acquire      Lease: Pass, Fail, Ignore     ErrLimitExceeded (no)
//	adaptive.Partition    Admit, Acquire      PartitionLease: the same      ErrLimitExceeded (no)
//	adaptive.Queue        Admit, Acquire:     Slot: the same                ErrQueueFull,
//	                      waits in ctx                                      ErrLimitExceeded (no)
//	breaker.Breaker       Admit, Allow        Promise: Pass, Fail, Ignore   ErrUnavailable (no)
//	shed.Shedder          Admit, Allow        Promise: Pass, Fail, Ignore   ErrOverloaded (no)
//	rate.BucketLimiter    Admit, Allow        nothing: spent when admitted  ErrLimited, quota (yes)
//	rate.SlidingLimiter   Admit, Allow        nothing                       ErrLimited, quota (yes)
//	rate.PeriodLimiter    Admit, Allow        nothing                       ErrLimited, quota (yes)
//	failurewindow.Window  Admit(key)          Record(key) for a failure     ErrTooManyFailures,
//	                                                                        quota (yes)
//	pool.Pool             Acquire(ctx):       Loan: Release, Destroy        ErrRefused (when the
//	                      blocks in ctx       (broken)                      ward says later)
//
// How Do (and Admission.End) settles an error, and the pure layer behind each type, which takes
// every instant as an argument and never reads a clock:
//
//	type                  own error   other error   pure layer
//	adaptive (all three)  Pass        Ignore        Core.Acquire(now), Ticket.Pass(now), …
//	breaker.Breaker       Pass        Fail          Core.Allow(now, roll), Core.Record(now, …)
//	shed.Shedder          Pass        Fail          Core.Allow(now, cpu), Ticket.Pass(now), …
//	rate (all three)      returned    returned      Bucket, Sliding, Period: TakeAt(now, n)
//	failurewindow.Window  nothing     Record(key)   Core.Admit(key, now), Core.Record(key, now)
//
// "own error" is an error a WithOwnError predicate accepts (not found, validation: the caller's,
// not the backend's); "other error" is any other non-nil error that is neither the caller's own
// cancellation (Ignore everywhere) nor a deadline or a WithFailure match (Fail everywhere). Every
// type has Now(), and its …At(now, …) forms take instants of that clock.
//
// # Where to start
//
// A server guarding one backend: [github.com/wardgo/ward/adaptive] in front of it (how many calls
// at once; its Knee rule is the one to start with), [github.com/wardgo/ward/breaker] around each
// call (is the backend failing),
// [github.com/wardgo/ward/shed] at the door (is this process overloaded),
// [github.com/wardgo/ward/rate] per client (quotas), [github.com/wardgo/ward/failurewindow] per
// address (failed logins), [github.com/wardgo/ward/retry] when a call may be tried again,
// [github.com/wardgo/ward/pool] for the connections themselves, and
// [github.com/wardgo/ward/wardhttp] to put any of them in front of a net/http handler or behind an
// http.Client; gRPC interceptors, Prometheus and OpenTelemetry metrics and shared quotas on Redis
// are nested modules under contrib/. [github.com/wardgo/ward/sim] drives the limiters, the breaker
// and the shedder through simulated overloads.
package ward
