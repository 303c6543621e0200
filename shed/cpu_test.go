package shed

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixture writes files under a temporary root, as a machine of the given layout would show them.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		write(t, root, name, body)
	}
	return root
}

func write(t *testing.T, root, name, body string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sampler returns a CPU over root with a manual clock, sampled by hand, folding as go-zero does
// (the fixtures' figures are go-zero's arithmetic).
func sampler(root string) (*CPU, *int64) { return samplerWith(root, GoZeroCPUPolicy()) }

func samplerWith(root string, p CPUPolicy) (*CPU, *int64) {
	now := new(int64)
	p.Every = time.Hour
	return newCPU(root, p, func() int64 { return *now }), now
}

func TestCPUCgroup2(t *testing.T) {
	root := fixture(t, map[string]string{
		"sys/fs/cgroup/cgroup.controllers":                           "cpu cpuset io memory",
		"proc/self/cgroup":                                           "0::/app.slice/ward.service\n",
		"sys/fs/cgroup/app.slice/ward.service/cpu.max":               "150000 100000\n", // 1.5 CPUs
		"sys/fs/cgroup/app.slice/ward.service/cpuset.cpus.effective": "0-3\n",
		"sys/fs/cgroup/app.slice/ward.service/cpu.stat":              "usage_usec 1000000\nuser_usec 800000\nsystem_usec 200000\n",
	})
	c, now := sampler(root)
	if c.Source() != "cgroup2" {
		t.Fatalf("source %q, want cgroup2", c.Source())
	}
	c.sample()
	if c.value.Load() != -1 {
		t.Fatal("a value after one reading: it takes two")
	}
	*now += int64(time.Second)
	write(t, root, "sys/fs/cgroup/app.slice/ward.service/cpu.stat", "usage_usec 1750000\n") // 0.75 CPU-s in 1 s of 1.5 CPUs
	c.sample()
	if got := c.value.Load(); got != 500 {
		t.Fatalf("first value %d, want 500", got)
	}
	*now += int64(time.Second)
	write(t, root, "sys/fs/cgroup/app.slice/ward.service/cpu.stat", "usage_usec 3250000\n") // 1.5 CPU-s: all of it
	c.sample()
	if got := c.value.Load(); got != 525 { // 500 × 0.95 + 1000 × 0.05
		t.Fatalf("averaged value %d, want 525", got)
	}
}

// statLine is a /proc/self/stat line with the given utime and stime, and a command name with a
// space and a parenthesis in it.
func statLine(utime, stime int) string {
	return fmt.Sprintf("4242 (my (srv) x) S 1 4242 4242 0 -1 4194304 124 0 0 0 %d %d 0 0 20 0 9 0 248917 3133440 414\n", utime, stime)
}

// TestCPUCgroup2NoQuota: a cgroup without a quota is not read (its use may be a neighbour's); the
// process's own time is, over the CPUs it may use.
func TestCPUCgroup2NoQuota(t *testing.T) {
	root := fixture(t, map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpu",
		"proc/self/cgroup":                 "0::/\n",
		"sys/fs/cgroup/cpu.max":            "max 100000\n",
		"sys/fs/cgroup/cpu.stat":           "usage_usec 0\n",
		"proc/self/stat":                   statLine(0, 0),
	})
	c, now := sampler(root)
	if c.Source() != "procself" {
		t.Fatalf("source %q, want procself", c.Source())
	}
	c.sample()
	*now += int64(time.Second)
	write(t, root, "sys/fs/cgroup/cpu.stat", fmt.Sprintf("usage_usec %d\n", runtime.NumCPU()*1000000)) // the machine: all busy
	write(t, root, "proc/self/stat", statLine(30, 10))                                                 // the process: 0.4 CPU-s
	c.sample()
	if got, want := c.value.Load(), int64(400/float64(runtime.NumCPU())+0.5); got != want {
		t.Fatalf("value %d, want %d (0.4 s of %d CPUs)", got, want, runtime.NumCPU())
	}
}

func TestCPUCgroup1(t *testing.T) {
	root := fixture(t, map[string]string{
		"proc/self/cgroup": "12:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
		"sys/fs/cgroup/cpuacct/docker/abc/cpuacct.usage": "5000000000\n",
		"sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us":  "200000\n", // 2 CPUs
		"sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us": "100000\n",
		"sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus":    "0\n", // but one CPU in the set
	})
	c, now := sampler(root)
	if c.Source() != "cgroup1" {
		t.Fatalf("source %q, want cgroup1", c.Source())
	}
	c.sample()
	*now += int64(2 * time.Second)
	write(t, root, "sys/fs/cgroup/cpuacct/docker/abc/cpuacct.usage", "5500000000\n") // 0.5 s in 2 s of 1 CPU
	c.sample()
	if got := c.value.Load(); got != 250 {
		t.Fatalf("value %d, want 250", got)
	}
}

// TestCPUProcSelf: without a cgroup, the process's own utime + stime; a neighbour heating the
// machine (/proc/stat all busy) does not move the reading.
func TestCPUProcSelf(t *testing.T) {
	root := fixture(t, map[string]string{
		"proc/stat":      "cpu  100 0 100 700 100 0 0 0 0 0\n",
		"proc/self/stat": statLine(100, 20),
	})
	c, now := sampler(root)
	if c.Source() != "procself" {
		t.Fatalf("source %q, want procself", c.Source())
	}
	cpus := float64(min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))
	c.sample()
	*now += int64(2 * time.Second)
	write(t, root, "proc/stat", "cpu  900 0 900 700 100 0 0 0 0 0\n") // a neighbour: the machine all busy
	write(t, root, "proc/self/stat", statLine(110, 30))               // the process: 0.2 CPU-s in 2 s
	c.sample()
	want := int64(100/cpus + 0.5)
	if got := c.value.Load(); got != want {
		t.Fatalf("value %d, want %d (0.2 CPU-s over 2 s of %v CPUs)", got, want, cpus)
	}
	write(t, root, "proc/self/stat", "garbage\n")
	*now += int64(time.Second)
	c.sample() // unreadable: the value stays
	if got := c.value.Load(); got != want {
		t.Fatalf("value %d after a bad read, want %d kept", got, want)
	}
}

// TestCPUProcSelfReal reads this test process's own CPU time on Linux.
func TestCPUProcSelfReal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/stat")
	}
	p := &procSelf{path: "/proc/self/stat", cpus: 1}
	if _, ok := p.read(0); !ok {
		t.Fatal("/proc/self/stat unreadable")
	}
}

func TestCPUNone(t *testing.T) {
	c, _ := sampler(t.TempDir())
	if c.Source() != "none" {
		t.Fatalf("source %q, want none", c.Source())
	}
	if got := c.Read(); got != -1 {
		t.Fatalf("Read = %d with nothing to read, want -1", got)
	}
	c.Stop()
}

func TestCountCPUs(t *testing.T) {
	for in, want := range map[string]int{"0-3": 4, "0": 1, "0-1,4,6-7": 5, "": 0, "x": 0, "3-1": 0, "0-3\n": 4} {
		if got := countCPUs(in); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestCPULifecycle: nothing runs before the first Read; Stop ends the goroutine and waits for it;
// a Read after Stop starts it again.
func TestCPULifecycle(t *testing.T) {
	root := fixture(t, map[string]string{"proc/self/stat": statLine(1, 1)})
	p := DefaultCPUPolicy()
	p.Every = time.Millisecond
	c := newCPU(root, p, func() int64 { return 0 })
	if c.state.Load() != 0 {
		t.Fatal("running before the first Read")
	}
	c.Read()
	if c.state.Load() != 1 {
		t.Fatal("not running after Read")
	}
	done := c.done
	c.Stop()
	select {
	case <-done:
	default:
		t.Fatal("Stop returned before the goroutine ended")
	}
	c.Stop() // twice is harmless
	c.Read()
	if c.state.Load() != 1 {
		t.Fatal("Read after Stop did not start it again")
	}
	c.Stop()
}

func TestShedderStartsSamplerOnFirstUse(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if s.sampler.state.Load() != 0 {
		t.Fatal("New started a goroutine")
	}
	if snap := s.Snapshot(); snap.CPU != -1 || s.sampler.state.Load() != 0 {
		t.Fatal("Snapshot started the sampler")
	}
	p, _ := s.Allow()
	p.Pass()
	if s.sampler.state.Load() != 1 {
		t.Fatal("Allow did not start the sampler")
	}
	s.Stop()
	if s.sampler.state.Load() != 0 {
		t.Fatal("Stop left the sampler running")
	}
}

// TestCPURise: the same cgroup readings as TestCPUCgroup2 under the preset: the value rises at once
// to a saturated interval's use, then falls as the average does.
func TestCPURise(t *testing.T) {
	root := fixture(t, map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpu cpuset io memory",
		"proc/self/cgroup":                 "0::/\n",
		"sys/fs/cgroup/cpu.max":            "100000 100000\n", // 1 CPU
		"sys/fs/cgroup/cpu.stat":           "usage_usec 0\n",
	})
	c, now := samplerWith(root, DefaultCPUPolicy())
	c.sample()
	for i, st := range []struct {
		usec int64 // busy in the second just ended
		want int64
	}{
		{100000, 100},   // the first reading seeds the average
		{1000000, 1000}, // saturated: lifted at once, where go-zero's average reads 145
		{1000000, 1000},
		{0, 950},      // idle: the average falls by Beta
		{0, 903},      // 902.5
		{500000, 882}, // a lighter interval moves the average, 902.5 × 0.95 + 500 × 0.05
		{950000, 950}, // a heavier one lifts it
	} {
		*now += int64(time.Second)
		usec := int64(0)
		fmt.Sscanf(strings.TrimPrefix(mustRead(t, root, "sys/fs/cgroup/cpu.stat"), "usage_usec "), "%d", &usec)
		write(t, root, "sys/fs/cgroup/cpu.stat", fmt.Sprintf("usage_usec %d\n", usec+st.usec))
		c.sample()
		if got := c.value.Load(); got != st.want {
			t.Fatalf("step %d: value %d, want %d", i, got, st.want)
		}
	}
}

func mustRead(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestCPUProcSelfGOMAXPROCS: the process's own time is read over at most GOMAXPROCS CPUs, read at
// every sample: one P busy for the whole interval reads 1000 under GOMAXPROCS=1.
func TestCPUProcSelfGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	root := fixture(t, map[string]string{"proc/self/stat": statLine(100, 20)})
	c, now := sampler(root)
	c.sample()
	*now += int64(2 * time.Second)
	write(t, root, "proc/self/stat", statLine(250, 70)) // 2 CPU-s in 2 s
	c.sample()
	if got := c.value.Load(); got != 1000 {
		t.Fatalf("value %d, want 1000 (2 CPU-s over 2 s of 1 P)", got)
	}
}

// TestCPUAverageStep: whatever the readings before it, a step to a saturated CPU reads at or over
// the preset threshold at the end of the first whole interval of saturation: within two intervals
// (500 ms) of the step. go-zero's average, from the same readings, takes 8 s or more.
func TestCPUAverageStep(t *testing.T) {
	threshold := DefaultPolicy().CPU
	for _, before := range []float64{0, 100, 444, 600, 899} {
		for _, n := range []int{1, 2, 40} { // intervals at the use before the step
			for _, part := range []float64{0, 0.3, 0.99} { // the step's interval: this share saturated
				for _, p := range []CPUPolicy{DefaultCPUPolicy(), GoZeroCPUPolicy()} {
					a, err := NewCPUAverage(p)
					if err != nil {
						t.Fatal(err)
					}
					for range n {
						a.Add(before)
					}
					a.Add(before*(1-part) + 1000*part)
					k := 1
					for ; a.Add(1000) < threshold; k++ {
					}
					if p.Rise && k != 1 {
						t.Errorf("%d intervals at %v, step interval %.0f%% saturated: hot after %d whole intervals of saturation, want 1", n, before, 100*part, k)
					}
					if !p.Rise && before < 600 && k < 32 {
						t.Errorf("go-zero's average from %v: hot after %d intervals, want the known lag (>= 32)", before, k)
					}
				}
			}
		}
	}
}

// TestCPUAverageEdges: before any reading the value is -1; NaN and negative uses read as 0; a huge
// one is held to what an int holds; Beta 0 follows the latest use.
func TestCPUAverageEdges(t *testing.T) {
	a, _ := NewCPUAverage(DefaultCPUPolicy())
	if a.Value() != -1 {
		t.Fatalf("value %d before any reading, want -1", a.Value())
	}
	if got := a.Add(math.NaN()); got != 0 {
		t.Fatalf("Add(NaN) = %d, want 0", got)
	}
	if got := a.Add(-5); got != 0 {
		t.Fatalf("Add(-5) = %d, want 0", got)
	}
	if got := a.Add(math.Inf(1)); got != math.MaxInt32 {
		t.Fatalf("Add(+Inf) = %d, want %d", got, math.MaxInt32)
	}
	p := GoZeroCPUPolicy()
	p.Beta = 0
	b, _ := NewCPUAverage(p)
	for _, use := range []float64{300, 900, 10} {
		if got := b.Add(use); got != int(use) {
			t.Fatalf("Beta 0: Add(%v) = %d, want %v", use, got, use)
		}
	}
}

func TestCPUPolicyErrors(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*CPUPolicy)
	}{
		{"CPUPolicy.Every", func(p *CPUPolicy) { p.Every = time.Millisecond - 1 }},
		{"CPUPolicy.Beta", func(p *CPUPolicy) { p.Beta = 1 }},
		{"CPUPolicy.Beta", func(p *CPUPolicy) { p.Beta = math.NaN() }},
		{"CPUPolicy.Beta", func(p *CPUPolicy) { p.Beta = -0.1 }},
	} {
		p := DefaultCPUPolicy()
		c.edit(&p)
		if _, err := NewCPUWith(p); err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewCPUWith(%+v) = %v, want an ErrInvalid naming %s", p, err, c.field)
		}
		if _, err := NewCPUAverage(p); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewCPUAverage(%+v) = %v, want an error naming %s", p, err, c.field)
		}
	}
	if _, err := NewCPUWith(GoZeroCPUPolicy()); err != nil {
		t.Fatal(err)
	}
}

// TestCPUAverageFall: with Rise, a saturated CPU that goes idle reads 950, then 903, then under
// the preset threshold: three readings at or over it counting the saturated one.
func TestCPUAverageFall(t *testing.T) {
	a, _ := NewCPUAverage(DefaultCPUPolicy())
	a.Add(100)
	var got []int
	for _, use := range []float64{1000, 0, 0, 0} {
		got = append(got, a.Add(use))
	}
	if want := []int{1000, 950, 903, 857}; !slices.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
}
