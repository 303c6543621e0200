// Package pool answers "which connection do I use, or do I make one?": a pool of costly resources
// (connections, mostly) held to four limits, with a ward in front of the backend they come from.
//
// [Core] is the bookkeeping, pure and deterministic: [Core.Take] gives one of six answers (Ready,
// Stale, Make, Wait, Later, Shed) from the instant and the draw it is given, and never opens,
// closes or waits. [Pool] is the concurrent pool a server uses as it uses pgxpool's or
// database/sql's: [Pool.Acquire] blocks until a resource is ready, the ward refuses, or the
// context ends; [Pool.Release] gives it back and [Pool.Destroy] says it broke.
//
// # The four limits
//
// Size bounds the resources live at once (idle, lent and being made), Idle the ones sitting
// idle, Keep how long one may sit idle and Life how long one may live at all ([DefaultLimits]:
// 10, 10, 30 minutes, forever). The most recently given back resource is lent first: a warm
// connection is likelier to still be good, and the oldest ones age past Keep and go, which is how
// a pool shrinks after a burst. A resource is known by identity, so its birth survives every loan
// and Life retires one that has been reused all along. One found past its age when taken is
// handed back to be closed (Stale), whether or not an eviction has run.
//
// # The ward
//
// A [Ward] can stand in front of the backend: a breaker that refuses new connections at the rate a
// failing backend deserves, a bucket that spaces makes out, a backoff after a make that failed,
// and a shedder that stops lending while the process is hot. Every part is optional, made from
// ward's own packages by [FromBreaker], [FromBucket], [FromBackoff] and [FromShedder], or from any
// type with the part's methods. The zero Ward is empty, and a pool with it decides exactly as a
// pool without one. [Pick] chooses between several pools to one service by two random choices.
//
// # The concurrent pool
//
// Acquire opens a resource on the caller's goroutine, under the caller's context: nothing runs in
// the background that could outlive the pool, the caller's deadline bounds the dial, and the
// error goes to the caller who asked. A resource an open produced after its caller gave up is
// not lost: it goes to the next waiter or the idle stack. Waiters are served in the order they
// came; a caller arriving while others wait queues behind them rather than taking what is
// released.
//
// The idle resources are a lock-free LIFO stack of slot numbers with a version tag (one
// compare-and-set to push, one to pop), with a cache of one resource per P (a processor of the Go
// scheduler) in front of it once goroutines contend, and a released resource is found from a
// read-only index replaced whole when a resource is made or retired. Acquiring an idle resource
// and releasing it take no lock and allocate nothing; the pool's mutex is taken only to make,
// retire or wait, and, when the ward has a shedder, on every lend and return (the shedder's core
// is not concurrent). Making or retiring a resource copies the index: cheap at the sizes pools
// have, linear in Size.
//
// # Which idle resource Acquire lends
//
// Until two goroutines first collide on the idle stack (a compare-and-set that fails), every idle
// resource is on it and Acquire lends exactly the most recently released one, as [Core.Take]
// does: a pool driven from one goroutine never leaves this mode. From the first collision on, a
// shared top-of-stack word would be written by every P on every call, so each P keeps a cache of
// one: Release puts the resource into its P's cache if that is empty, and on the stack otherwise;
// Acquire lends its P's cached resource, else the top of the stack, else one cached on another P.
// "Most recently released" then holds per P: the resource a P's goroutines released last is the
// one they are lent next, which keeps what LIFO is for (a warm resource is reused, and the ones
// nobody needs age past Keep and go). Between Ps no order is kept: calls on two Ps at once have
// none. Either way, waiters are served before a new caller takes an idle resource, a resource
// cached on a P serves a waiter on any other (no lost wake-up), every one found past its age is
// retired rather than lent, Limits.Idle counts the cached ones, and Evict and Close reach them.
//
// # The clock on the idle path
//
// A clock read costs about 30 ns, as much as the rest of an idle Acquire and Release together.
// With the default clock and Keep or Life set, the idle path reads ages against a coarse clock: a
// reading refreshed by a timer every millisecond (or every 64th of the shorter age, if that is
// less) while the pool is in use. The timer stops after a tick during which nobody read it, and the
// next call reads the real clock itself and starts it again; so the reading an idle Acquire or
// Release uses is at most one tick old, plus however late the runtime runs the timer. A resource
// can therefore be lent up to that much past Keep or Life, or be retired that much early; when
// the shorter age is under 3.2 ms every call reads the clock. Making, retiring and waiting always
// read the real clock, and a clock given by [WithClock] is read at every decision (so a test
// replays a pool exactly).
//
// # Edge cases
//
//   - Core.Take after Close answers Shed; Give and Made answer false after Close, so each lent
//     resource is closed as it comes back.
//   - Made reports whether the core took the resource: false with no Make outstanding or for a
//     resource the core already knows. Give of a resource the core does not know fills an
//     outstanding Make (born then), or answers false if there is none.
//   - Give of a resource already idle keeps it as it is and answers true; Drop of one that is not
//     lent does nothing; Unmade with no Make outstanding does nothing.
//   - A resource given back past Life is not kept (Give answers false): it would only come back
//     as Stale. Ages are strict: a resource idle exactly Keep, or alive exactly Life, is still good.
//   - Time is read only as differences; an instant before a resource's stamp (a clock gone
//     backwards) ages it by nothing. After a failed make the backoff holds making back until the
//     failure's instant plus the delay, so a clock gone backwards lengthens the wait it reports.
//   - The ward's parts are asked in an order that leaves no trace in a part that did not refuse:
//     the backoff and the bucket's wait (Later), the shedder, then the breaker (Shed); the bucket's
//     token is spent only on a Make. Lending an idle resource asks only the shedder.
//   - Pool.Release or Pool.Destroy of a resource the pool did not lend (never acquired, or
//     released already) does nothing: it may be another caller's. Release after Close closes it.
//   - An open that fails with the caller's own cancellation gives the reservation back without
//     counting a failure in the breaker or starting the backoff; any other open error counts.
//   - When the ward refuses a make while callers wait (Later or Shed), every waiter gets the
//     refusal: nothing else would wake them when the wait is over.
//   - The idle stack's version tag is 32 bits: a pop that stalls while exactly a multiple of 2³²
//     other pushes and pops complete could misread it, as in every tagged stack.
package pool
