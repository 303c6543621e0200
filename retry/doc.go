// Package retry says when to try again and how long a budget has left: a [Backoff] with the five
// jitters (Rigid, Full, Equal, Decorrelated, Spread), a [Deadline], and [Do], a context-aware retry
// loop that honours a server's pushback or Retry-After hint and the wait a ward refusal carries.
//
// Backoff and Deadline are pure: the draws and the clock are arguments, so a retry schedule is a
// plain function of its inputs, testable and printable ([Backoff.Schedule]). Do reads a clock only
// through its sleep, which tests replace ([WithSleep]) so that nothing ever waits. retry guards no
// call of its own: it has no admission and no Now, and its instants are the caller's.
//
// The preset ([DefaultBackoff]) is gRPC's proposal A6 (100 ms doubling to 1 s, spread by a fifth
// either way, as grpc-go and grpc-java draw it) with the AWS SDKs' standard three attempts.
//
// # Edge cases
//
//   - Jitter is a float64-backed value: the four named strategies are negative constants, and
//     Spread(f) is f itself, held to [0, 1]. Spread(0) is the same delay as Rigid.
//   - Decorrelated delays are held to the cap (AWS's formula: min(cap, random(base, prev × 3))).
//   - Do retries every error but the context's own unless told otherwise ([WithRetryIf]), and
//     never a ward refusal without a wait (an error matching ward.ErrRefused that ward.RetryAfter
//     finds no wait in: an adaptive limit, a breaker, a shedder said no). Retrying a local refusal
//     is how retry storms start; WithRetryIf can narrow what is retried, never widen it past this.
//   - A ward refusal that carries a wait (a rate limit, a failure window) is retried after exactly
//     that wait, read as a server's positive hint: it replaces the backoff's delay and resets the
//     backoff.
//   - A hint ([Hinted]) is read as gRPC A6 reads a server pushback: negative means do not retry
//     (Do returns the error), zero means retry at once, positive is waited exactly instead of the
//     backoff's delay (the context still bounds it); and a hint resets the backoff, so the next
//     unhinted wait is the first retry's again. An error that is both a Hinted and a ward refusal
//     is read by its hint.
//   - A Cap of the largest Duration reads as "no cap": delays grow until they reach it and never
//     wrap. Every delay is within [0, Cap] for any retry number (Spread(f) may pass Cap by
//     Cap × f, up to the largest Duration).
//   - Schedule lists at most [MaxScheduled] delays, so a policy that retries until its context
//     ends (Attempts = math.MaxInt) still has a printable plan.
//   - A roll outside [0, 1) (NaN included) is held into it, NaN counting as 0.
//   - A Deadline's Start and the instants given to it are of one monotonic clock the caller
//     reads (a ward type's Now(), say). An instant before Start leaves the whole budget, one far
//     after it spends it, exactly for any two int64 instants; a budget of zero or less never
//     expires.
//   - Configuration errors match [ErrInvalid] and ward.ErrInvalid and name the field
//     (Backoff.Base, Backoff.Cap, ...) or the option; a nil option or a nil function given to one
//     is an error, returned by Do without calling fn.
package retry
