// Package wardredis shares ward's rate limits across a fleet: a token bucket, a fixed period or
// an exact sliding window per key, kept in Redis (github.com/redis/go-redis/v9, any redis.UniversalClient: a single
// server, Sentinel or Cluster) and decided on the server, atomically, by one Lua script per call.
//
//	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true, MaxRetries: -1})
//	l, err := wardredis.NewPeriod(c, "quota:", 1000, time.Minute, false,
//		wardredis.WithLease(50, 100*time.Millisecond), wardredis.WithFallback(1.0/20))
//	...
//	err = l.Do(ctx, apiKey, handle) // rate.ErrLimited with its wait, or handle's error
//
// The package is named wardredis so that it sits beside go-redis's package redis without an
// alias.
//
// # Consistency
//
// Every decision is one script on one key (prefix+key), run with EVALSHA and loaded again when
// the server has lost it (NOSCRIPT, after SCRIPT FLUSH or a restart). The script reads the time
// from the server (TIME), so the processes' clocks may disagree; WithClock makes it use the
// caller's instants instead. Driven with the same instants, a bucket decides exactly as
// rate.Bucket.Step and a period as rate.Period.Step (same grants, same waits, same stored state,
// bit for bit: the scripts repeat the pure cores' float64 operations in order, and the
// differential tests compare them against a live server). A sliding window decides as
// rate.Sliding.Take for instants in order (and for a jump back past rate.MaxSkew: pulled back,
// full); see [NewSliding] for an instant a little before its newest stamp. Instants are whole microseconds,
// TIME's resolution; a period must be a whole number of them.
//
// A bucket's or a period's key holds one string, its state as two numbers ("tokens stamp", "start
// count"), read with GET and written with its expiry by one SET ... PX: two server calls a
// decision. A sliding window's key is a sorted set of the stamps in its window, one member per
// admitted call (ZREMRANGEBYSCORE, ZCARD, ZADD in the script), expiring a window after its newest
// stamp.
//
// One key per call: a Cluster routes each call to the key's slot, and any key works. A prefix
// holding a hash tag ("{quota}:") would put every key on one slot; leave tags to the keys.
//
// A key lives while it matters and one keep (WithKeep, 1 s) longer: a bucket until it is full
// again, a period until it ends. A key found absent reads as a full bucket or no open period,
// which is what the pure cores compute at that instant.
//
// # Leasing
//
// With WithLease(max, life), a call of one token that finds nothing leased asks the store for
// several (at most max) and keeps the rest in this process for later calls, for at most life; a
// refusal of the store is remembered until the wait it gave has passed. A hot key then costs one
// round trip per lease rather than one per call. The size asked follows the local rate: what the
// previous lease handed out, scaled to a life, between 1 and max.
//
// The bound. Leased tokens are taken from the shared state by the script, atomically, so the
// fleet never hands out more tokens than the store granted: a token unused when its lease
// expires is lost (fewer admitted, never more), and no token is handed out twice. A period's
// lease expires at its period's end at the latest (measured from the instant the lease was
// asked, so never later), so a period admits at most its quota, exactly as without leasing. A
// bucket's leased token may be handed out up to life after the store granted it, so over any
// stretch of time T the fleet admits at most burst + rate × (T + life) calls, where the bucket
// alone would admit burst + rate × T: choose life small against burst/rate to keep the excess
// small. This assumes the processes' clocks run at the server's rate over a lease's life.
//
// # When the store cannot decide
//
// A call the store cannot decide (the server down, slow past the context, refusing, or the
// breaker in front of it open) is decided by the failure policy chosen at construction, and
// counted (Stats: one counter per outcome). ward's breaker (breaker.New, or WithBreaker) sits in
// front of the server: once calls fail, it refuses most of them without a round trip, so a dead
// server costs a breaker decision per call rather than a timeout; it lets a probe through every
// second and closes as calls succeed again, with no restart. On a *redis.ClusterClient each
// master has a breaker of its own (made on first use, the master found by the key's slot), so
// one dead master sheds its own keys' calls while the others' keys are decided as before;
// WithBreaker puts one breaker in front of every master instead. A key holding something else (another
// type, or a string that is not two numbers) is an error matching [ErrGarbage] naming the key; the
// server answered, so the breaker counts it as a success. Every other error reply (OOM, BUSY,
// READONLY, CLUSTERDOWN, MASTERDOWN, LOADING, ...) is a store failure: counted in Stats.Errors and
// settled on the breaker as a failure, so a full or failing-over server sheds like a dead one.
//
//	policy      such a call is                       Do returns                        the quota meanwhile
//	FailClosed  refused (the default)                ErrUnavailable (ward.ErrRefused)  never exceeded; nothing passes
//	FailOpen    admitted                             fn's error                        not enforced
//	Fallback    decided by a local rate.Bucket-      fn's error, or rate.ErrLimited    share × the quota per process
//	            Limiter per key at share of the      with its wait
//	            quota (WithFallback(share))
//
// The store's share of a call is bounded: a round trip runs until the call's context's deadline
// or WithTimeout's (100 ms unless told), whichever comes first, so a dead, hung or unreachable
// server costs each call at most that timeout, never the caller's whole deadline, until the
// breaker opens and costs nothing. go-redis honours a context's deadline on the socket and while
// dialing only with ContextTimeoutEnabled, so a *redis.Client, *redis.ClusterClient or
// *redis.Ring without it is a configuration error. The client settings for a quota store:
//
//	redis.NewClient(&redis.Options{
//		Addr:                  addr,
//		ContextTimeoutEnabled: true,                   // required: the call's deadline reaches the socket
//		MaxRetries:            -1,                     // no retry: a script whose reply was lost may have run
//		DialTimeout:           100 * time.Millisecond, // an unreachable server fails fast
//		DialerRetries:         1,                      // one dial a call; the breaker decides when to try again
//		PoolTimeout:           100 * time.Millisecond, // a pool drained by a hung server refuses fast
//	})
//
// go-redis's defaults with ContextTimeoutEnabled work too (the timeout bounds them); these make
// an outage cheaper still, and MaxRetries: -1 keeps go-redis from sending a decision twice.
//
// # The contract
//
// [Limiter.Do] and [Key.Do] refuse with rate.ErrLimited (matching ward.ErrRefused) carrying
// the wait (ward.RetryAfter), or [ErrUnavailable] under FailClosed. A [Key] is a ward.Guard (Now,
// Do) and a rate.Permit (Acquire, Release), usable in a rate.Chained; its Acquire decides at the
// limiter's clock whatever instant it is given, since a caller's instants are not the fleet's.
// Now is the server's clock as this process last heard it (Unix nanoseconds), or WithClock's.
//
// # Edge cases
//
//   - A round trip allocates what go-redis allocates and little more: 13 small values a decision
//     on a *redis.Client (the command and its arguments, the deadline of a context that has none,
//     the reply, go-redis's connection check). A call answered by a lease, or refused while the
//     store's refusal stands, allocates nothing.
//   - Instants are held to [MaxInstant] either way of the clock's origin (TakeAt returns an
//     error beyond); TakeAt rounds an instant down to a whole microsecond.
//   - The server's clock jumping back (TIME is a wall clock) is handled as the pure cores handle
//     it: a state more than rate.MaxSkew ahead is pulled back, spent.
//   - A key whose bucket expired finds a full bucket at the call's instant even if the clock has
//     since stepped back before the key's last stamp; the pure core would keep the later stamp.
//   - Local state (leases, fallback limiters) is kept for at most WithKeys keys (10,000), and
//     in bounded memory whatever the keys' length: a key longer than 64 bytes is kept under a
//     128-bit digest of it, so an entry holds about 200 bytes at most beside its fallback
//     limiter. A key dropped to make room (a long one first) loses its lease (tokens wasted, not
//     reused) and its fallback starts full.
//   - Eviction: every key this package writes carries an expiry, so under any maxmemory-policy
//     but noeviction a full server may evict a key and with it the quota's count (the key then
//     reads as a full bucket, or no open period: more calls admitted than the quota allows).
//     Run the quota store with maxmemory-policy noeviction (a full server then answers OOM, a
//     store failure the failure policy decides), or on a server whose memory never fills.
//   - go-redis retries a failed dial within a call's deadline (DialerRetries, 5 × 100 ms by
//     default) and, once dials keep failing, dials again in the background about once a second:
//     a server back from a restart is seen within about a second of it, then the breaker's probe
//     finds it.
package wardredis
