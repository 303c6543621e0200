package wardredis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	wardredis "github.com/wardgo/ward/contrib/redis"
)

const (
	fleetProcs   = 4
	fleetQuota   = 50
	fleetPeriod  = 40 * time.Millisecond
	fleetRun     = 300 * time.Millisecond // each child runs at least this long,
	fleetSeen    = 3                      // and until it saw this many periods refuse it,
	fleetMost    = 2 * time.Minute        // or this long at most (a machine too busy to load a key)
	fleetWorkers = 6
)

// report is what a child process prints: per period start, the calls admitted and refused, and
// its round trips.
type report struct {
	Granted    map[int64]int
	Refused    map[int64]int
	RoundTrips uint64
	Admitted   int
}

// TestFleet runs fleetProcs copies of this test binary against one key of a period limiter, with
// leasing off and on: in every period the fleet admits at most the quota, and with leasing off
// exactly the quota in every period where some call was refused (demand exceeded it). Each child
// runs until it has seen fleetSeen periods refuse it, so a loaded machine makes the test slower,
// not wrong; the store's timeout is patient for the same reason.
func TestFleet(t *testing.T) {
	for _, lease := range []bool{false, true} {
		t.Run("lease="+strconv.FormatBool(lease), func(t *testing.T) {
			key := prefix(t) + strconv.FormatInt(time.Now().UnixNano(), 10)
			var wg sync.WaitGroup
			reports := make([]report, fleetProcs)
			errs := make([]error, fleetProcs)
			for i := range fleetProcs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChild$", "-test.count=1")
					cmd.Env = append(os.Environ(), childEnv+"=1", "WARDREDIS_ADDR="+shared.Addr(),
						"WARDREDIS_KEY="+key, "WARDREDIS_LEASE="+strconv.FormatBool(lease))
					out, err := cmd.Output()
					if err != nil {
						errs[i] = err
						return
					}
					errs[i] = json.Unmarshal(lastLine(out), &reports[i])
				}()
			}
			wg.Wait()
			granted, refused := map[int64]int{}, map[int64]int{}
			var admitted, trips int
			for i, r := range reports {
				if errs[i] != nil {
					t.Fatalf("child %d: %v", i, errs[i])
				}
				for p, n := range r.Granted {
					granted[p] += n
				}
				for p, n := range r.Refused {
					refused[p] += n
				}
				admitted += r.Admitted
				trips += int(r.RoundTrips)
			}
			exhausted := 0
			for p, n := range granted {
				if n > fleetQuota {
					t.Errorf("period %d: %d admitted, quota %d", p, n, fleetQuota)
				}
				if refused[p] > 0 {
					exhausted++
					if !lease && n != fleetQuota {
						t.Errorf("period %d: %d admitted with %d refused, want exactly the quota %d", p, n, refused[p], fleetQuota)
					}
				}
			}
			if exhausted < fleetSeen {
				t.Errorf("only %d periods saw demand over the quota; the test did not load the key", exhausted)
			}
			t.Logf("%d processes, %d periods (%d exhausted), %d admitted in %d round trips", fleetProcs, len(granted), exhausted, admitted, trips)
		})
	}
}

const reportMark = "wardredis-report: "

// lastLine returns the child's report line, without its mark.
func lastLine(b []byte) []byte {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if r, ok := bytes.CutPrefix(line, []byte(reportMark)); ok {
			return r
		}
	}
	return nil
}

// TestFleetChild is one process of TestFleet; it does nothing unless TestFleet started it.
func TestFleetChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestFleet in a child process")
	}
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("WARDREDIS_ADDR"), ContextTimeoutEnabled: true, PoolSize: fleetWorkers,
		ReadTimeout: patient, WriteTimeout: patient, DialTimeout: patient})
	defer c.Close()
	opts := []wardredis.Option{wait}
	if os.Getenv("WARDREDIS_LEASE") == "true" {
		opts = append(opts, wardredis.WithLease(fleetQuota/8, fleetPeriod/4))
	}
	l, err := wardredis.NewPeriod(c, "", fleetQuota, fleetPeriod, true, opts...)
	if err != nil {
		t.Fatal(err)
	}
	key := os.Getenv("WARDREDIS_KEY")
	var mu sync.Mutex
	r := report{Granted: map[int64]int{}, Refused: map[int64]int{}}
	begin := time.Now()
	seen := map[int64]bool{} // periods that refused a call, under mu
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		took := time.Since(begin)
		return took >= fleetRun && len(seen) >= fleetSeen || took >= fleetMost
	}
	var wg sync.WaitGroup
	for range fleetWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, f := map[int64]int{}, map[int64]int{}
			for !done() {
				d, err := l.Take(context.Background(), key, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.OK {
					g[d.Start]++
				} else {
					f[d.Start]++
					mu.Lock()
					seen[d.Start] = true
					mu.Unlock()
				}
			}
			mu.Lock()
			for p, n := range g {
				r.Granted[p] += n
				r.Admitted += n
			}
			for p, n := range f {
				r.Refused[p] += n
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.RoundTrips = l.Stats().RoundTrips
	b, _ := json.Marshal(r)
	fmt.Printf("\n%s%s\n", reportMark, b)
}
