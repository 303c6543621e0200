package shed

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
)

// CPU samples the CPU use of the process (or of its container, when the container's CPU is
// limited), in thousandths of what it may use, for a [Shedder] to read. It reads, in order of
// preference:
//
//   - cgroup v2 with a quota (cpu.max other than "max"): usage_usec of cpu.stat over the quota
//     and the CPUs in cpuset.cpus.effective;
//   - cgroup v1 with a quota (cpu.cfs_quota_us > 0): cpuacct.usage over the quota and
//     cpuset.cpus;
//   - else, with [CPUPolicy].Queued (the preset), the time the process's threads ran and waited
//     on the kernel's run queues, the first two fields of /proc/self/task/*/schedstat, over the
//     wall time elapsed and the CPUs the process may use;
//   - else the process's own CPU time, utime + stime of /proc/self/stat, over the same.
//
// Without a quota the container's, or the machine's, use is not this process's: a neighbouring
// process heating the machine must not make this server shed, so the reading is then the
// process's own. With a quota the container's use is what the quota throttles, so it is the
// reading that matters. The machine-wide /proc/stat is never read. The process's own reading
// counts, with Queued, the CPU it asked for and waited for as well as the CPU it was given: a
// process that other load keeps from its CPUs, its goroutines queueing for Ps whose threads
// wait for a CPU, reads saturated, where its CPU time alone would read what the machine let it
// have, under the threshold however long the queue. A neighbour that leaves this process the
// CPU it asks for changes neither reading.
//
// The CPUs the process may use are the fewest of the quota (a fraction: a quota of 150 ms per
// 100 ms is 1.5 CPUs), the cpuset and runtime.NumCPU (which follows the process's CPU affinity);
// for the process's own time, runtime.GOMAXPROCS too, read at every sample, since Go code cannot
// run on more Ps than that: a server run with GOMAXPROCS=1 on a larger machine reads 1000 when
// its one P is busy.
//
// A reading is taken every [CPUPolicy].Every (250 ms) and folded by a [CPUAverage]: a moving
// average weighted Beta (0.95) that, with Rise (the default), an interval of higher use lifts
// to that use at once. The average alone is go-zero's (core/stat/usage.go: the same interval and
// weight, the average seeded by the first reading), [GoZeroCPUPolicy]; it climbs from a low
// reading to 900 thousandths over 8 s or more of saturation, so a server whose CPU saturates in a
// step keeps admitting all that time and queues the calls behind its CPU. With Rise the reading
// reaches the threshold at the end of the first whole interval of saturation, within two
// intervals (500 ms) of the step whatever the readings before it, and falls as slowly as the
// average: an interval of lighter use in the middle of an overload does not cool the server, and
// a saturated CPU that goes idle reads under 900 from the third reading after (750 ms). A single
// busy interval on an otherwise quiet server reads hot for three readings (750 ms); the shedder
// still refuses nothing unless the server is full too.
//
// The sampling goroutine starts on the first Read, not before (nothing runs at import or at
// construction) and Stop ends it; a Read after Stop starts it again. A [Shedder] whose sampler
// New made, on ward's clock, also takes a reading that is due from the calls that read the
// clock (the timed admissions and the paced refusals): a saturated server's sampling goroutine
// waits for a P behind the very calls that saturate it, and its readings would come late. Either
// way one caller takes a due reading, paying for its file reads, and no other waits for it. Where no source can be read (not
// Linux, no permission), Read returns -1 and a Shedder never counts the server as hot.
type CPU struct {
	root  string // filesystem root, "/" in production; a fixture directory in tests
	every time.Duration
	clock func() int64

	value atomic.Int64 // thousandths, or -1 while unknown
	state atomic.Int32 // 0 stopped, 1 running
	due   atomic.Int64 // when the next reading is due, by clock

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
	src  source
	last reading
	have bool
	avg  CPUAverage
}

// NewCPU returns a sampler of the real machine with [DefaultCPUPolicy]; nothing runs until its
// first Read.
func NewCPU() *CPU {
	c, _ := NewCPUWith(DefaultCPUPolicy()) // the preset is valid
	return c
}

// NewCPUWith returns a sampler of the real machine with p; nothing runs until its first Read.
// An invalid p is an error matching [ErrInvalid] that names the field.
func NewCPUWith(p CPUPolicy) (*CPU, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newCPU("/", p, clock.Now), nil
}

// newCPU returns a sampler of the filesystem under root, reading instants from now.
func newCPU(root string, p CPUPolicy, now func() int64) *CPU {
	c := &CPU{root: root, every: p.Every, clock: now, avg: CPUAverage{p: p, value: -1}}
	c.value.Store(-1)
	return c
}

// CPUPolicy is how a [CPU] sampler reads: how often, and how the readings fold into the value a
// shedder reads. Build one from [DefaultCPUPolicy] or [GoZeroCPUPolicy] and change fields.
type CPUPolicy struct {
	// Every is the interval between readings: 250 ms (go-zero core/stat/usage.go cpuRefreshInterval).
	// At least 1 ms: the process's own time moves in ticks of 10 ms, so a shorter interval reads
	// mostly noise.
	Every time.Duration
	// Beta weighs the moving average of the readings, in [0, 1): 0.95 (go-zero beta); 0 makes
	// the value the latest interval's use.
	Beta float64
	// Rise lifts the average to an interval's use when the use is higher, so that the value
	// reaches a saturated CPU at the end of the first whole interval of saturation, and falls
	// from there by Beta: true (ward's own; go-zero has none, which is false).
	Rise bool
	// Queued counts, with the process's own time, the time its threads waited for a CPU on the
	// kernel's run queues (Linux's /proc/self/task/*/schedstat), so that the use is the CPU the
	// process used or asked for: a process that other load on the machine keeps from the CPUs its
	// GOMAXPROCS allows reads saturated when its threads never stop asking, where its CPU time
	// alone reads low however long its goroutines queue. Each reading reads one small file per
	// thread of the process. true (ward's own; go-zero has none, which is false). It changes
	// nothing under a cgroup quota, whose use is what the quota throttles, nor where the kernel
	// keeps no such counts.
	Queued bool
}

// DefaultCPUPolicy returns the preset: a reading every 250 ms, averaged with weight 0.95, the value
// rising at once to the latest interval's use, the time the process's threads waited for a CPU
// counted as use.
func DefaultCPUPolicy() CPUPolicy {
	return CPUPolicy{Every: 250 * time.Millisecond, Beta: 0.95, Rise: true, Queued: true}
}

// GoZeroCPUPolicy returns go-zero's sampler exactly (core/stat/usage.go, v1.10.3): a reading every
// 250 ms folded into a moving average weighted 0.95, seeded by the first reading, without Rise
// and without Queued.
func GoZeroCPUPolicy() CPUPolicy { return CPUPolicy{Every: 250 * time.Millisecond, Beta: 0.95} }

// Validate reports the first field of p that is out of range, by name.
func (p CPUPolicy) Validate() error {
	switch {
	case p.Every < time.Millisecond:
		return contract.Field(ErrInvalid, "CPUPolicy.Every", p.Every, ">= 1ms")
	case !(p.Beta >= 0 && p.Beta < 1):
		return contract.Field(ErrInvalid, "CPUPolicy.Beta", p.Beta, "in [0, 1)")
	}
	return nil
}

// CPUAverage is the pure arithmetic of a [CPU] sampler: it folds each interval's use into the
// value a shedder reads, as its [CPUPolicy] says. It is deterministic and not safe for concurrent
// use; the zero value is not usable: build one with [NewCPUAverage]. A simulator drives it with
// the use of each interval and gives its value to [Core.Allow].
type CPUAverage struct {
	p     CPUPolicy
	avg   float64
	value int
}

// NewCPUAverage returns an average with no reading yet (Value -1).
func NewCPUAverage(p CPUPolicy) (*CPUAverage, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &CPUAverage{p: p, value: -1}, nil
}

// Add folds one interval's use, in thousandths (a NaN or negative use reads as 0), and returns the
// value: the first use is the value as it is, and each later one moves the average by 1 − Beta;
// with Rise, a use over the average lifts the average to it. The value is the average rounded to
// whole thousandths.
func (a *CPUAverage) Add(use float64) int {
	if !(use > 0) {
		use = 0
	}
	use = min(use, math.MaxInt32)
	if a.value < 0 || a.p.Rise && use > a.avg {
		a.avg = use
	} else {
		a.avg = a.avg*a.p.Beta + use*(1-a.p.Beta)
	}
	a.value = int(a.avg + 0.5)
	return a.value
}

// Value returns the latest value in thousandths, or -1 before the first Add.
func (a *CPUAverage) Value() int { return a.value }

// Read returns the latest moving average in thousandths, or -1 while no reading is possible. The
// first Read starts the sampling goroutine and takes one reading on the way.
func (c *CPU) Read() int {
	if c.state.Load() == 0 {
		c.start()
	}
	return int(c.value.Load())
}

func (c *CPU) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Load() == 1 {
		return
	}
	c.due.Store(c.clock() + int64(c.every))
	c.sample()
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	c.state.Store(1)
	go c.loop(c.stop, c.done)
}

func (c *CPU) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.poll(c.clock())
		}
	}
}

// poll takes a reading if one is due at now (an instant of the sampler's clock): the first caller
// after the due instant takes it, and any other goes on at once. The sampling goroutine polls on
// every tick; a [Shedder] whose sampler New made polls from its calls too, so that a reading is
// not late when the goroutine waits for a P behind the very calls that saturate it. The due
// instants keep one grid, every interval from the first: a poll that comes late does not push
// the next one later, so a tick woken a little later than the one before still takes its reading.
func (c *CPU) poll(now int64) {
	due := c.due.Load()
	if now < due {
		return
	}
	next := due + int64(c.every)
	if next <= now { // a whole interval or more late: the first instant of the grid past now
		next += (now - due) / int64(c.every) * int64(c.every)
	}
	if !c.due.CompareAndSwap(due, next) || !c.mu.TryLock() {
		return
	}
	c.sample()
	c.mu.Unlock()
}

// Stop ends the sampling goroutine and waits for it; the last value stays readable.
func (c *CPU) Stop() {
	c.mu.Lock()
	if c.state.Load() == 0 {
		c.mu.Unlock()
		return
	}
	stop, done := c.stop, c.done
	c.state.Store(0)
	c.mu.Unlock()
	close(stop)
	<-done
}

// Source returns which source the sampler reads: "cgroup2", "cgroup1", "schedstat", "procself"
// or "none".
func (c *CPU) Source() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.src == nil {
		c.src = detect(c.root, c.avg.p.Queued)
	}
	return c.src.name()
}

// sample takes one reading and folds it in; c.mu is held.
func (c *CPU) sample() {
	if c.src == nil {
		c.src = detect(c.root, c.avg.p.Queued)
	}
	r, ok := c.src.read(c.clock())
	if !ok {
		return
	}
	if !c.have {
		c.last, c.have = r, true
		return
	}
	use, ok := c.src.use(c.last, r)
	c.last = r
	if !ok {
		return
	}
	c.value.Store(int64(c.avg.Add(use)))
}

// reading is a pair of cumulative counters: busy time and the time it is measured against.
type reading struct{ busy, total float64 }

type source interface {
	name() string
	read(now int64) (reading, bool)
	use(prev, cur reading) (float64, bool) // thousandths
}

func readFile(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// detect picks the source for the filesystem under root: a cgroup only when it limits the CPU
// with a quota, else the process's own time, with the time its threads waited for a CPU when
// queued and the kernel keeps it.
func detect(root string, queued bool) source {
	self, _ := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if _, err := os.Stat(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers")); err == nil {
		dir := filepath.Join(root, "sys/fs/cgroup", cgroupPath(self, ""))
		if _, ok := readFile(filepath.Join(dir, "cpu.stat")); ok {
			if quota, cpus := limit2(dir, root); quota > 0 {
				return &cgroup2{dir: dir, cpus: cpus}
			}
		}
	}
	acct := filepath.Join(root, "sys/fs/cgroup/cpuacct", cgroupPath(self, "cpuacct"))
	if _, ok := readFile(filepath.Join(acct, "cpuacct.usage")); ok {
		if quota, cpus := limit1(root, self); quota > 0 {
			return &cgroup1{usage: filepath.Join(acct, "cpuacct.usage"), cpus: cpus}
		}
	}
	if queued {
		q := &schedStat{dir: filepath.Join(root, "proc/self/task"), cpus: fewest(0, 0)}
		if _, ok := q.read(0); ok {
			return q
		}
	}
	if _, ok := readFile(filepath.Join(root, "proc/self/stat")); ok {
		return &procSelf{path: filepath.Join(root, "proc/self/stat"), cpus: fewest(0, 0)}
	}
	return none{}
}

// cgroupPath returns the process's cgroup path for controller ("" for the v2 unified line) from
// /proc/self/cgroup; "/" when it cannot tell, which is what a container sees as its own.
func cgroupPath(self []byte, controller string) string {
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2]
			}
		}
	}
	return "/"
}

// countCPUs counts the CPUs in a cpuset list such as "0-3,8,10-11"; 0 when it cannot parse.
func countCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// fewest returns the least of the quota (in CPUs, 0 if none), the cpuset count (0 if none) and
// the CPUs the runtime sees.
func fewest(quota float64, cpuset int) float64 {
	n := float64(runtime.NumCPU())
	if cpuset > 0 {
		n = min(n, float64(cpuset))
	}
	if quota > 0 {
		n = min(n, quota)
	}
	return n
}

type cgroup2 struct {
	dir  string
	cpus float64
}

// limit2 returns the quota in CPUs (0 if none) and the CPUs the process may use.
func limit2(dir, root string) (float64, float64) {
	var quota float64
	if s, ok := readFile(filepath.Join(dir, "cpu.max")); ok {
		f := strings.Fields(s)
		if len(f) == 2 && f[0] != "max" {
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && p > 0 {
				quota = q / p
			}
		}
	}
	set, ok := readFile(filepath.Join(dir, "cpuset.cpus.effective"))
	if !ok {
		set, _ = readFile(filepath.Join(root, "sys/fs/cgroup/cpuset.cpus.effective"))
	}
	return quota, fewest(quota, countCPUs(set))
}

func (c *cgroup2) name() string { return "cgroup2" }

func (c *cgroup2) read(now int64) (reading, bool) {
	s, ok := readFile(filepath.Join(c.dir, "cpu.stat"))
	if !ok {
		return reading{}, false
	}
	for _, line := range strings.Split(s, "\n") {
		if v, found := strings.CutPrefix(line, "usage_usec "); found {
			usec, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return reading{}, false
			}
			return reading{busy: usec * 1000, total: float64(now)}, true
		}
	}
	return reading{}, false
}

func (c *cgroup2) use(prev, cur reading) (float64, bool) { return quotaUse(prev, cur, c.cpus) }

// quotaUse is busy nanoseconds over wall nanoseconds times the CPUs allowed, in thousandths.
func quotaUse(prev, cur reading, cpus float64) (float64, bool) {
	wall := cur.total - prev.total
	busy := cur.busy - prev.busy
	if wall <= 0 || busy < 0 || cpus <= 0 {
		return 0, false
	}
	return min(busy/(wall*cpus)*1000, 1000), true
}

type cgroup1 struct {
	usage string
	cpus  float64
}

// limit1 returns the quota in CPUs (0 if none) and the CPUs the process may use.
func limit1(root string, self []byte) (float64, float64) {
	dir := filepath.Join(root, "sys/fs/cgroup/cpu", cgroupPath(self, "cpu"))
	var quota float64
	q, ok1 := readFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	p, ok2 := readFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if ok1 && ok2 {
		qv, err1 := strconv.ParseFloat(q, 64)
		pv, err2 := strconv.ParseFloat(p, 64)
		if err1 == nil && err2 == nil && qv > 0 && pv > 0 {
			quota = qv / pv
		}
	}
	set, _ := readFile(filepath.Join(root, "sys/fs/cgroup/cpuset", cgroupPath(self, "cpuset"), "cpuset.cpus"))
	return quota, fewest(quota, countCPUs(set))
}

func (c *cgroup1) name() string { return "cgroup1" }

func (c *cgroup1) read(now int64) (reading, bool) {
	s, ok := readFile(c.usage)
	if !ok {
		return reading{}, false
	}
	ns, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return reading{}, false
	}
	return reading{busy: ns, total: float64(now)}, true
}

func (c *cgroup1) use(prev, cur reading) (float64, bool) { return quotaUse(prev, cur, c.cpus) }

// userHZ is the unit of utime and stime in /proc/self/stat: clock ticks of 1/100 s (USER_HZ, which
// the Linux ABI fixes at 100 on every architecture Go supports).
const userHZ = 100

// procSelf reads the process's own CPU time.
type procSelf struct {
	path string
	cpus float64
}

func (p *procSelf) name() string { return "procself" }

// read takes utime + stime (fields 14 and 15; the command name in field 2 may hold spaces and
// parentheses, so the fields are counted from its closing parenthesis) as busy nanoseconds
// against now.
func (p *procSelf) read(now int64) (reading, bool) {
	s, ok := readFile(p.path)
	if !ok {
		return reading{}, false
	}
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return reading{}, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return reading{}, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return reading{}, false
	}
	return reading{busy: float64(utime+stime) * (1e9 / userHZ), total: float64(now)}, true
}

// use counts the CPUs the process may use as at most runtime.GOMAXPROCS, read now: Go code runs on
// no more Ps than that.
func (p *procSelf) use(prev, cur reading) (float64, bool) {
	return quotaUse(prev, cur, min(p.cpus, float64(runtime.GOMAXPROCS(0))))
}

// schedStat reads the time the process's threads ran and waited on the kernel's run queues: the
// first two fields of /proc/self/task/*/schedstat, in nanoseconds.
type schedStat struct {
	dir  string
	cpus float64
}

func (q *schedStat) name() string { return "schedstat" }

// read sums run and wait time over the process's threads as busy nanoseconds against now. A
// thread that ended since the last reading takes its time with it: the sum then falls, and use
// skips that interval.
func (q *schedStat) read(now int64) (reading, bool) {
	tasks, err := os.ReadDir(q.dir)
	if err != nil || len(tasks) == 0 {
		return reading{}, false
	}
	var busy float64
	for _, t := range tasks {
		s, ok := readFile(filepath.Join(q.dir, t.Name(), "schedstat"))
		if !ok {
			continue // the thread ended while the directory was read
		}
		f := strings.Fields(s)
		if len(f) < 2 {
			return reading{}, false
		}
		run, err1 := strconv.ParseUint(f[0], 10, 64)
		wait, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return reading{}, false
		}
		busy += float64(run) + float64(wait)
	}
	return reading{busy: busy, total: float64(now)}, true
}

// use counts the CPUs the process may use as at most runtime.GOMAXPROCS, read now, as procSelf's
// does.
func (q *schedStat) use(prev, cur reading) (float64, bool) {
	return quotaUse(prev, cur, min(q.cpus, float64(runtime.GOMAXPROCS(0))))
}

type none struct{}

func (none) name() string                         { return "none" }
func (none) read(int64) (reading, bool)           { return reading{}, false }
func (none) use(reading, reading) (float64, bool) { return 0, false }
