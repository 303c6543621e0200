// Package shed refuses work only when the server is both hot (CPU) and full (calls in flight over
// what it has shown it can carry), as go-zero's core/load/adaptiveshedder.go
// (v1.10.3) does: a CPU spike with nothing queued refuses nothing, and neither does a long queue on
// an idle CPU.
//
// # The shedder or the adaptive limiter
//
// Use the shedder when the server's bottleneck is its own CPU: it refuses nothing until the CPU
// is hot, so a server that is busy but not CPU-bound runs at full speed, and it needs no tuning.
// Use the adaptive limiter (package adaptive) when the bottleneck is anything else: a worker
// pool, a connection pool, a lock, a downstream service, a disk. Those queue with the CPU cool,
// and the shedder, which only sheds when hot, gives them no protection at all; the adaptive
// limiter reads the response time and holds calls in flight near what the bottleneck can carry.
// When in doubt, use the adaptive limiter; both can stand in front of the same handler.
//
// The CPU reading is the process's own ([CPU]): the container's use when its CPU is limited by
// a quota, else the CPU time the process's threads used and waited for on the kernel's run
// queues over the CPUs it may use (GOMAXPROCS at most), so a neighbouring process heating the
// machine does not make this server shed unless it keeps the server from the CPU the server
// asks for.
//
// # Metrics
//
// A [Shedder] is a ward.Counter and a ward.Timed, as every ward guard is, so an exporter reads it
// as it reads any other: [Shedder.Counts] gives the calls admitted, refused and settled by
// outcome, exact once every call has settled, and [Shedder.Latency] the histogram of the timed
// passes' response times. Both are kept in the per-P rows that hold the calls in flight, so
// keeping them adds no pinned section to a call. [Shedder.Snapshot] gives the state a dashboard
// draws: calls in flight, their average, the capacity, the CPU reading and whether it is hot.
//
// # A step overload
//
// [CPU]'s preset ([DefaultCPUPolicy]) lifts its average at once to an interval of higher use and
// lets it fall by the moving average's weight, so a server whose CPU saturates in a step reads
// hot at the end of the first whole 250 ms interval of saturation: within 500 ms of the step,
// whatever the readings before it. The shedder then refuses as soon as it is also full. Two
// things keep that true on a busy machine: the reading counts the time the process's threads
// waited for a CPU (a server that the machine gives 70% of a core, its goroutines queueing,
// reads saturated, where its CPU time reads 700), and a shedder's own sampler takes its
// readings from the shedder's calls when they are due (its goroutine would wait for a P behind
// the calls that saturate it, and the readings would come seconds late). go-zero's
// sampler ([GoZeroCPUPolicy]: the average alone, seeded by the first reading) climbs from a
// reading of 400 to 900 over about 8 s of saturation, and the calls admitted meanwhile queue
// behind the CPU; to use it, build a sampler with [NewCPUWith]([GoZeroCPUPolicy]()) and give its
// Read to [WithCPU]. [CPUAverage] is the sampler's arithmetic alone, for simulations that feed a
// [Core] their own CPU readings.
//
// # Refusing before the work queues
//
// A Go server decides on a request when the request's goroutine first runs: after net/http has
// read its headers, behind every goroutine that was runnable before it. Nothing in the process
// sees a request earlier. Within that, a refusal is as early and as cheap as it can be: the
// shedder decides before the handler does any work (put wardhttp.Shed outermost), and a refusal
// is a few loads and a sentinel error, with no lock, no allocation and a clock read only now and
// then (see [Shedder]).
//
// What a refusal waits for is the goroutine scheduler, in which each runnable goroutine runs
// until it blocks or its time slice (10 ms) ends; on a server of few Ps, a call admitted and
// computing holds its P while the requests behind it wait, and the shedder, which counts the
// calls in flight, sees none of those waiting. So while the server is hot, an admitted call
// yields its P once (runtime.Gosched) before Allow returns: the goroutines already waiting run
// first and find it in flight, and the shedder refuses them in microseconds each, instead of
// after its work. A hot server's admitted calls wait one pass of the run queue, which then holds
// mostly refusals; a cool server's calls never yield. Handlers that compute for long stretches
// without blocking still delay every request behind them by up to a time slice each: keep the
// CPU-bound work of one call short, or split it.
//
// The reading counts the time the process's threads waited for a CPU only where the kernel keeps
// it (Linux's schedstat); elsewhere, and with [CPUPolicy].Queued false, a process kept from the
// CPUs its GOMAXPROCS allows by other load on the machine (and not by its own quota) reads below
// the threshold however long its goroutines wait. Give [WithCPU] a reading of your own where
// that matters.
//
// # Events
//
// [WithEvents] tells a function when the shedder turns hot (from the fold that refreshes the
// capacity, which runs only while hot) and when it cools (from the first call that finds it cool
// after that): two calls per hot spell, nothing on any other call.
//
// # Two layers
//
// [Core] is the pure arithmetic: deterministic, the clock and the CPU reading passed in, not safe
// for concurrent use. [Shedder] is the concurrent type: calls in flight kept per P, passes and
// response times in a per-P striped window, capacity folded and cached, the CPU read from a
// sampler ([CPU]: a cgroup v2 or v1 quota, or the process's own time) that starts on first use and stops on
// [Shedder.Stop]. Driven from one goroutine with [WithRefresh](0), [WithSampleEvery](1), an
// injected clock and an injected CPU reading, a Shedder gives exactly the Core's decisions.
//
//	s, _ := shed.New()
//	defer s.Stop()
//	err := s.Do(ctx, serve)
//	if errors.Is(err, shed.ErrOverloaded) {
//		return err // answer 503 at once
//	}
//
// Do settles the call by serve's error, as every ward type's Do does: nil and the errors
// [WithOwnError] accepts (the server did the work) pass, and their response time counts toward
// capacity; the caller's own cancellation is ignored (it leaves flight and records nothing);
// context.DeadlineExceeded, the errors [WithFailure] accepts and any other error fail (they leave
// flight and say nothing about capacity); a panic fails and continues. By hand, [Shedder.Allow]
// returns a [Promise] to settle with Pass, Fail or Ignore.
//
// Hot: the CPU is at or over Policy.CPU (900 thousandths), or it was within Policy.Cool (1 s) and
// the shedder has refused since. Full: both the moving average and the current count of calls in
// flight exceed the busiest bucket's passes per millisecond × the fastest bucket's mean response
// time in milliseconds (at least 1), both taken over the window and the last one to two
// Policy.Memory spans (1 min: without it a queue inflates the response times and the capacity with
// them, window after window), scaled by (1000 − cpu) / (1000 − threshold), held within
// [MinShare, 1]. The current, partial bucket is left out of both readings.
//
// # Edge cases
//
//   - The concurrent admission is a [Promise] (as in package breaker, and as go-zero names it),
//     settled without an instant; the Core's [Ticket] takes one for Pass. Both have the same
//     verbs: Pass (leaves flight, moves the average of calls in flight, counts a response time
//     toward capacity), Fail (leaves flight, moves the average) and Ignore (leaves flight only).
//     Settling twice through the same variable is a no-op.
//   - Response times are kept in nanoseconds, not go-zero's whole milliseconds rounded up, so a
//     server answering in 100 µs is not credited with ten times its capacity.
//   - With call sampling (the default), untimed calls leave flight without moving the average of
//     calls in flight; timed ones move it by Beta^n, n the sampling period, which keeps the
//     preset's memory measured in calls.
//   - A CPU reading under 0 means unknown: the server is never hot. A reading over 1000 is taken
//     as it is (the factor is then held at MinShare). MinShare is named apart from package
//     breaker's KFloor: it is a share of capacity, not a floor of K.
//   - A settle at an instant before its admission counts a response time of 0.
//   - The hot rule is one function that Core, Shedder and Snapshot all apply.
//   - A clock that jumps back by more than a window (or that once returned a far-future instant,
//     such as a Unix time given by mistake) is read as the clock having jumped: the window
//     restarts empty at the new instant, and the latest reading, the refresh due and the last hot
//     instant are pulled back to it, so the server cools within Cool of the jump rather than
//     years later, and a hot, full server still refuses. A Shedder has no …At forms: every
//     instant comes from its clock, which [Shedder.Now] reads.
//   - A nil Option, and a nil clock, CPU reading or predicate given to an option, are errors
//     matching [ErrInvalid] that name the option.
package shed
