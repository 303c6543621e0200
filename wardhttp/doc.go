// Package wardhttp puts ward's admission control in front of net/http handlers and behind an
// http.Client, on ward's one contract: a refusal is answered before the handler runs, an admitted
// request settles from its response.
//
// # Server
//
// One middleware per admission type, each a [Middleware] (func(http.Handler) http.Handler):
//
//   - [Limit]: an adaptive concurrency limit (adaptive.Limiter); refuses with 503.
//   - [Shed]: a load shedder (shed.Shedder); refuses with 503.
//   - [Rate]: a quota per key ([Quota]: [PerKey] over a rate.Partitioned, [Shared] over one
//     rate limiter); refuses with 429, and Retry-After when the quota knows its wait.
//   - [Failures]: a failure window per key (failurewindow.Window); the handler's outcome counts,
//     and a key at its limit is refused with 429 and Retry-After before the handler runs.
//
// Keys come from a [KeyFunc]: [ByClientAddr], [ByHeader], [ByRoute]. Compose middlewares with
// [Chain] (the first decides first: put the cheapest refusal outermost), and protect one route by
// wrapping only its handler in a ServeMux.
//
//	rule, _ := adaptive.NewGradient(adaptive.DefaultGradient())
//	lim, _ := adaptive.New(rule)
//	protect, _ := wardhttp.Limit(lim)
//	http.ListenAndServe("localhost:8080", protect(handler))
//
// Outcomes. An admitted request settles once, from the status the handler wrote, by a [Classify]
// ([Classified] by default, replaced with [WithClassify]): 5xx (handler timeouts from
// http.TimeoutHandler included) and the request's own deadline passing are Fail; 4xx is Ignore
// (the client's error says nothing about the server); the client going away (the request's
// context canceled) is Ignore; anything else is Pass. A panic settles Fail and continues
// (http.ErrAbortHandler after the client left settles Ignore), so net/http's own recovery still
// sees it.
//
// The writer the handler sees keeps net/http's optional interfaces: it implements http.Flusher,
// http.Hijacker, io.ReaderFrom and http.Pusher by delegating to the server's writer, and Unwrap,
// so http.NewResponseController reaches the server's deadlines and full-duplex mode. Where the
// server's writer lacks a feature, Flush does nothing, Hijack and Push return
// http.ErrNotSupported, and ReadFrom copies through Write. A hijacked connection settles Pass.
//
// Refusals. [Refuse] writes the answer: 503 for an overload (limit, shedder), 429 for a quota
// (rate, failure window), with Retry-After in whole seconds, rounded up, when the wait is known,
// and a short text body. [WithRefuse] replaces it; the [Refusal] it gets carries the package's
// sentinel (matching ward.ErrRefused), the status and the wait. A refusal allocates nothing of
// its own (header values are built once); an admitted request allocates the status-capturing
// writer and its settle closure, two small values next to net/http's own per request.
//
// # Client
//
// [Transport] is an http.RoundTripper: a breaker per host, an optional adaptive limit on the calls
// in flight, and retries through retry.Do that honour Retry-After (delay-seconds and HTTP-date)
// and spend from a [RetryBudget] (gRPC A6 retry throttling: 10 tokens, a tenth given back per
// success), so retries cannot multiply an outage. Only requests that can be sent again are
// retried: no body or GetBody, and an idempotent method or an Idempotency-Key header, the rule
// net/http applies to its own retries. A ward refusal is never retried: when the breaker or the
// limit refuses a retry, the previous attempt's response is returned (the backend's 503, body
// unread), not the refusal. [WithAttemptTimeout] bounds each attempt until its response headers
// arrive, so one hung attempt fails and is retried instead of spending the time
// http.Client.Timeout gives the whole call. The per-host breakers live in a bounded table
// ([WithMaxHosts]) that drops idle hosts and never a refusing one, listed by
// [Transport.Breakers] for metrics and status pages.
//
//	tr, _ := wardhttp.NewTransport(nil, wardhttp.WithAttemptTimeout(time.Second))
//	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
//
// # Edge cases
//
//   - A handler that writes nothing is answered 200 by net/http and settles Pass; one that writes
//     only 1xx informational headers settles on the final status.
//   - A status written after the client left still settles Ignore: the client's going away wins.
//   - [ByHeader] gives every request without the header the key "", one shared allowance.
//   - [ByRoute] is empty outside a ServeMux's routing: wrap the handlers you register, not the mux.
//   - [PerKey]'s refusals carry Retry-After only when each key's limiter knows its wait (a rate
//     limiter or pure core of package rate); a key behind a rate.Gate or rate.Chain has none.
//   - A Retry-After longer than [WithMaxRetryAfter] (10 s by default) is not waited for: the
//     response is returned. A Retry-After date in the past retries at once; an unreadable one is
//     ignored (the backoff's wait applies).
//   - A 429 is a failed attempt for the retry budget but Ignore for the breaker: a quota says
//     nothing about the backend's health.
//   - A retry refused after an attempt that ended in an error (no response to give back)
//     returns the refusal.
package wardhttp
