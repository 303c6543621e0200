package shed

import (
	"os"
	"path/filepath"
	"runtime"
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

// sampler returns a CPU over root with a manual clock, sampled by hand.
func sampler(root string) (*CPU, *int64) {
	now := new(int64)
	return newCPU(root, time.Hour, func() int64 { return *now }), now
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

func TestCPUCgroup2NoQuota(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs for the cpuset to be the limit")
	}
	root := fixture(t, map[string]string{
		"sys/fs/cgroup/cgroup.controllers":    "cpu",
		"proc/self/cgroup":                    "0::/\n",
		"sys/fs/cgroup/cpu.max":               "max 100000\n",
		"sys/fs/cgroup/cpuset.cpus.effective": "1\n", // one CPU
		"sys/fs/cgroup/cpu.stat":              "usage_usec 0\n",
	})
	c, now := sampler(root)
	c.sample()
	*now += int64(time.Second)
	write(t, root, "sys/fs/cgroup/cpu.stat", "usage_usec 400000\n")
	c.sample()
	if got := c.value.Load(); got != 400 {
		t.Fatalf("value %d, want 400 (0.4 s of one CPU)", got)
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

func TestCPUProcStat(t *testing.T) {
	root := fixture(t, map[string]string{
		"proc/stat": "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n",
	})
	c, _ := sampler(root)
	if c.Source() != "procstat" {
		t.Fatalf("source %q, want procstat", c.Source())
	}
	c.sample()
	write(t, root, "proc/stat", "cpu  250 0 150 1250 150 0 0 0 0 0\n") // busy +200, total +800
	c.sample()
	if got := c.value.Load(); got != 250 {
		t.Fatalf("value %d, want 250", got)
	}
	write(t, root, "proc/stat", "garbage\n")
	c.sample() // unreadable: the value stays
	if got := c.value.Load(); got != 250 {
		t.Fatalf("value %d after a bad read, want 250 kept", got)
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
	root := fixture(t, map[string]string{"proc/stat": "cpu  1 0 1 8 0 0 0 0 0 0\n"})
	c := newCPU(root, time.Millisecond, func() int64 { return 0 })
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
