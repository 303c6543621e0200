package shed

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/internal/clock"
)

// CPU samples the CPU use of the process (or of its container, when the container's CPU is
// limited), in thousandths of what it may use, for a [Shedder] to read. It reads, in order of
// preference:
//
//   - cgroup v2 with a quota (cpu.max other than "max"): usage_usec of cpu.stat over the quota
//     and the CPUs in cpuset.cpus.effective;
//   - cgroup v1 with a quota (cpu.cfs_quota_us > 0): cpuacct.usage over the quota and
//     cpuset.cpus;
//   - else the process's own CPU time, utime + stime of /proc/self/stat, over the wall time
//     elapsed and the CPUs the process may use.
//
// Without a quota the container's, or the machine's, use is not this process's: a neighbouring
// process heating the machine must not make this server shed, so the reading is then the
// process's own. With a quota the container's use is what the quota throttles, so it is the
// reading that matters. The machine-wide /proc/stat is never read.
//
// The CPUs the process may use are the fewest of the quota (a fraction: a quota of 150 ms per
// 100 ms is 1.5 CPUs), the cpuset and runtime.NumCPU (which follows the process's CPU affinity). A reading is taken every 250 ms and folded into a
// moving average weighted 0.95 (go-zero's core/stat/usage.go uses the same interval and weight).
//
// The sampling goroutine starts on the first Read, not before (nothing runs at import or at
// construction) and Stop ends it; a Read after Stop starts it again. Where no source can be read
// (not Linux, no permission), Read returns -1 and a Shedder never counts the server as hot.
type CPU struct {
	root  string // filesystem root, "/" in production; a fixture directory in tests
	every time.Duration
	clock func() int64

	value atomic.Int64 // thousandths, or -1 while unknown
	state atomic.Int32 // 0 stopped, 1 running

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
	src  source
	last reading
	have bool
	avg  float64
}

// NewCPU returns a sampler of the real machine; nothing runs until its first Read.
func NewCPU() *CPU { return newCPU("/", 250*time.Millisecond, clock.Now) }

func newCPU(root string, every time.Duration, now func() int64) *CPU {
	c := &CPU{root: root, every: every, clock: now}
	c.value.Store(-1)
	return c
}

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
			c.mu.Lock()
			c.sample()
			c.mu.Unlock()
		}
	}
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

// Source returns which source the sampler reads: "cgroup2", "cgroup1", "procself" or "none".
func (c *CPU) Source() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.src == nil {
		c.src = detect(c.root)
	}
	return c.src.name()
}

// sample takes one reading and folds it in; c.mu is held.
func (c *CPU) sample() {
	if c.src == nil {
		c.src = detect(c.root)
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
	if c.value.Load() < 0 {
		c.avg = use
	} else {
		c.avg = c.avg*0.95 + use*0.05
	}
	c.value.Store(int64(c.avg + 0.5))
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
// with a quota, else the process's own time.
func detect(root string) source {
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

func (p *procSelf) use(prev, cur reading) (float64, bool) { return quotaUse(prev, cur, p.cpus) }

type none struct{}

func (none) name() string                         { return "none" }
func (none) read(int64) (reading, bool)           { return reading{}, false }
func (none) use(reading, reading) (float64, bool) { return 0, false }
