// Package live is a page to watch ward's guards while a server runs: an http.Handler, mounted as
// net/http/pprof and expvar are, that shows every guard registered with it as charts of the last
// minutes, updated live, and the same data as JSON for tools.
//
//	lim := adaptive.Default()
//	page, _ := live.New()
//	page.Limiter("api", lim)
//	page.Breaker("db", dbBreaker)
//	mux.Handle("/debug/ward/", page)
//	mux.Handle("/api/", wardhttp.ProtectWith(lim, api))
//
// There is no global registry: a server builds its Page, registers its guards by name and
// mounts it where it likes (behind whatever authentication it puts in front of its other debug
// handlers). The page is one HTML document whose style and script are inline, with no font,
// script or image from elsewhere (its Content-Security-Policy forbids any), so it works offline.
// It polls its own URL with format=json every [WithEvery] and redraws; the same JSON is served
// at any path ending in ".json" below the mount point. [Page.JSON] documents its fields.
//
// # What it shows
//
// Each guard is a card of series, each with its current value and a chart of the history kept
// ([WithHistory] samples, five minutes at one a second by default). A gauge is charted as read;
// a counter (a count that only grows, such as calls refused) is charted as its rate per second
// between samples, with the total beside it. The typed methods read what each type already
// exposes, at sample time only, so no call pays for the page:
//
//   - [Page.Limiter]: limit, in flight, latency (the last window's average), refused.
//   - [Page.Queue]: the calls waiting in line; [Page.Partition]: in flight and guarantee.
//   - [Page.Breaker]: ratio (the share refused now), the window's successes, failures and drops,
//     refused.
//   - [Page.Shedder]: CPU, in flight and its moving average, capacity, hot, refused.
//   - [Page.Pool]: lent, idle, live, making, waiting; opened, failed and closed.
//   - [Page.FailureWindow]: keys, failures stored, evictions, uncounted failures.
//   - [Page.Bucket]: a token bucket's tokens.
//
// Every guard that counts its calls (a ward.Counter) also shows admitted and refused per second
// with their totals, the admitted calls settled per second by outcome (passed, failed, ignored)
// where the guard settles them, and abandoned where its callers wait (a queue, a pool); every
// guard that times its calls (a ward.Timed) shows the mean response time of the calls timed
// between two samples (latency mean). A rate bucket built without rate.WithCounts shows its
// tokens only.
//
// Any other guard that counts (a rate limiter of another shape, a retry budget, a guard of your
// own) is registered with [Page.Guard]; anything else with [Page.Add] and a function that reports
// its [Readings].
//
// # When it samples
//
// A Page starts no goroutine. It samples when its page or JSON is served, at most once every
// [WithEvery] ([Page.Sample]), so history builds while someone watches. To keep history while
// nobody does, run [Page.Run] on a goroutine of your own; it stops when its context ends. A
// sample reads every guard under the Page's lock, which serving and registering also take; the
// guards' own paths are never blocked by it.
//
// # Edge cases
//
//   - A name registered twice, an empty name or a nil guard is an error matching [ErrInvalid]
//     that names the argument; [Page.Remove] frees a name.
//   - A guard registered late, or a series a guard reports only sometimes, is null in the JSON
//     (a gap in the chart) where it was not read; so is a value that is not a finite number,
//     such as a shedder's CPU before its first reading.
//   - A counter that goes down is read as a restart: no rate for that step.
//   - A clock that moves back takes a sample at once; rates across it are null.
//   - The page shows the guards in the order they were registered.
package live
