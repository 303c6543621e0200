// Package pool answers "which connection do I use, or do I make one?": a pool of costly resources
// (connections, mostly) held to four limits, with a ward in front of the backend they come from.
//
// [Core] is the bookkeeping, pure and deterministic: [Core.Take] gives one of six answers (Ready,
// Stale, Make, Wait, Later, Shed) from the instant and the draw it is given, and never opens,
// closes or waits. [Pool] is the concurrent pool a server uses as it uses pgxpool's or
// database/sql's: [Pool.Acquire] blocks until a resource is ready, the ward refuses, or the
// context ends, and returns a [Loan]; [Loan.Release] gives the resource back and [Loan.Destroy]
// says it broke.
//
// # The four limits
//
// Size bounds the resources live at once (idle, lent and being made), Idle the ones sitting
// idle, Keep how long one may sit idle and Life how long one may live at all ([DefaultLimits]:
// 10, 10, 30 minutes, forever). The most recently given back resource is lent first: a warm
// connection is likelier to still be good, and the oldest ones age past Keep and go, which is how
// a pool shrinks after a burst. Keep is the setting that shrinks a server's pool; Idle below Size
// closes a resource given back while Idle sit idle, so traffic that swings above Idle in use at
// once reopens connections all the time (see [Limits].Idle). Idle is a bound at every instant:
// no reader of [Pool.Stats] ever sees more idle. A resource is known by identity, so its birth survives every loan
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
// Acquire opens a resource on a goroutine of its own and waits for it until the caller's context
// ends. The open is given a context that carries the caller's values but not its cancellation,
// and that ends after the pool's dial timeout ([WithDialTimeout], [DefaultDialTimeout] 5 s): a dial
// that has started finishes under the pool's own limit, whatever the caller's patience. A caller
// whose context ends first returns at once with the context's error, even if the open ignores its
// context, and the resource the open makes goes to the next waiter or the idle set, so a backend
// slower than callers' deadlines still warms the pool. Its slot stays taken, and counted live and
// making, until the open returns: an open that ignores its context and never returns holds its
// slot for ever. An open error, the dial timeout's included, counts as a failed make (breaker and
// backoff) and goes to the caller if it still waits. A panic in open gives the slot back, counts a
// failure, and continues on the caller's goroutine (so a server that recovers a handler's panic
// recovers it); if the caller has already returned, it continues on the open's goroutine, as any
// goroutine's panic does. An open that calls runtime.Goexit fails the Acquire. An open still under
// way when the pool closes finishes, and its resource is closed. Waiters are served in the order
// they begin to receive on the pool's channel, which is the order they began to wait but for a
// short window: a caller counts itself among the waiters before it receives (the first also
// serves under the lock, and closes what it found past its age, in between), and a grant sent
// for it then goes to whichever waiter receives first, possibly one that came after it, in whose
// place it waits on. A caller arriving while others wait unserved queues behind them rather than
// taking what is released.
//
// # Loans
//
// Acquire returns a [Loan]: the resource and the loan's generation, a number the resource's slot
// moves on every time it is lent, taken back or retired. Release and Destroy take the resource
// back with one compare-and-set of the slot's word against the generation the Loan holds, so a
// second Release of the same loan (by the same Loan or a copy of it) matches nothing and does
// nothing, even after the resource was lent to someone else, and the check costs nothing beyond
// the compare-and-set a Release takes anyway. The price is the handle: a Loan is the pool's
// address, the resource and two numbers (four words for a pointer resource), returned by value
// and never allocated, and the caller keeps it rather than the bare resource. Generations are 62
// bits: a Loan kept while its slot is lent 2⁶² more times could be misread, which no program
// lives long enough to see.
//
// The idle resources are a lock-free LIFO stack of slot numbers with a version tag (one
// compare-and-set to push, one to pop), with a cache of one resource per P (a processor of the Go
// scheduler) in front of it once goroutines contend; with Idle below Size a count of the idle
// resources is reserved before a resource turns idle and given up after it leaves, so the count
// bounds them at every instant. Acquiring an idle resource and releasing it take no lock and
// allocate nothing. The callers waiting their turn all wait on one channel the pool makes with
// it, and a count of them: a Release that finds callers waiting hands its resource to the first
// with one compare-and-set of the count and one send, as a channel hands a value to a goroutine
// waiting on it, with no lock and no wake-up that finds nothing. What it hands on is 16 bytes
// with no pointer, written straight into the stack of a caller blocked on the channel; a caller
// that waits allocates nothing of the pool's (but for the error of a Later refusal, below). The
// pool's mutex is taken only to make, retire, turn the count of waiters from none to one, or
// refuse them, and, when the ward has a shedder, on every lend and return (the shedder's core is
// not concurrent).
//
// A Pool is a ward.Counter: [Pool.Counts] counts each loan once, when it ends (Release a pass,
// Destroy a fail, a failed open a fail), the Acquires the ward refused, and those whose context
// ended while they waited. Counting costs a Release one plain add on the cache line of the
// resource's own bookkeeping, which the Release writes anyway, and a Destroy one on its P's own
// line; Acquire's idle path writes nothing more.
//
// # Allocation-free in your build
//
// Go compiles a generic type's methods in the package that instantiates it: Pool[*YourConn] is
// compiled in your package, and there the compiler can inline a call into one of ward's internal
// packages only if the export data it reads carries that function's body, which a package that
// imports pool alone does not always bring in. So the idle path does not depend on it: every
// lock-free step (the idle stack, the Ps' caches, the idle count, the coarse clock, the loan's
// check) lives in code that does not depend on T and is compiled once, in this package, and the
// generic methods call it; none of it ranges over an iterator, whose closure would escape to the
// heap wherever the iterator is not inlined. The test suite checks the idle path allocates
// nothing from a package that imports pool and nothing else of ward's.
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
// A clock read costs as much as the rest of an idle Acquire and Release together.
// With the default clock and Keep or Life set, the idle path reads ages against a coarse clock: a
// reading refreshed by a timer every millisecond (or every 64th of the shorter age, if that is
// less) while the pool is in use. The timer stops after a tick during which nobody read it, and the
// next call reads the real clock itself and starts it again; so the reading an idle Acquire or
// Release uses is at most one tick old, plus however late the runtime runs the timer. A resource
// can therefore be lent up to that much past Keep or Life, or be retired that much early; when
// the shorter age is under 3.2 ms every call reads the clock. A Release decides on that reading
// whether it hands its resource to a waiter, keeps it or retires it; making, evicting, and
// serving a waiter from the idle set read the real clock, and a clock given by [WithClock] is
// read at every decision (so a test replays a pool exactly).
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
//   - A Release or Destroy of a loan that has ended (released or destroyed already, by this Loan
//     or a copy) does nothing: the resource may be another caller's now. The zero Loan's Release
//     and Destroy do nothing. Release after Close closes the resource.
//   - A caller whose context ends while it waits in the queue leaves it at once, unless a grant
//     is owed to every caller waiting (a Release or a make is handing one on, one send away): it
//     then leaves when such a grant reaches it or another caller begins to wait, whichever comes
//     first, never later. One served as it gives up passes what it was served on (a resource to
//     the next caller, a reservation back uncounted).
//   - Stats' fields are read one after another while the pool runs: under concurrent use they
//     need not add up. With Idle below Size, Stats.Idle is the idle count, which also counts a
//     resource on its way in or out of the idle set, and is never above Limits.Idle.
//   - When the ward refuses a make while callers wait (Later or Shed), every waiter gets the
//     refusal: nothing else would wake them when the wait is over. A waiter refused by Later gets
//     an error of its own carrying the wait (one allocation, on the refusal only).
//   - The idle stack's version tag is 32 bits: a pop that stalls while exactly a multiple of 2³²
//     other pushes and pops complete could misread it, as in every tagged stack.
package pool
