package bench

import (
	"github.com/platinummonkey/go-concurrency-limits/core"
	"github.com/platinummonkey/go-concurrency-limits/limit"

	"github.com/wardgo/ward/sim"
)

// netflixAdmitter drives one of the Go port's limit algorithms in the simulator: it enforces
// in flight < EstimatedLimit() itself, as the port's SimpleStrategy does, and feeds OnSample the
// simulated start time and response time, which the port's limits take explicitly.
type netflixAdmitter struct {
	lim      core.Limit
	inFlight int
}

func (n *netflixAdmitter) Admit(now int64) (func(int64, bool), bool) {
	if n.inFlight >= n.lim.EstimatedLimit() {
		return nil, false
	}
	n.inFlight++
	start, in := now, n.inFlight
	return func(t int64, dropped bool) {
		n.inFlight--
		n.lim.OnSample(start, t-start, in, dropped)
	}, true
}

func (n *netflixAdmitter) Limit() int { return n.lim.EstimatedLimit() }

// NetflixRules are the Go port's algorithms as the simulator runs them, each inside the port's
// WindowedLimit (1 s windows of at least 10 samples, like ward's Limiter):
//
//   - netflix-go-gradient2: Gradient2 with the port's defaults (initial 20, min 20, max 200,
//     queue 4, smoothing 0.2, long window 600) and a 100 µs sample threshold;
//   - netflix-go-gradient2-default: the same with the port's default threshold of 1e8 ns, which
//     is 100 ms, not the 100 µs its doc says: at a 50 ms service time it discards every sample;
//   - netflix-go-aimd: AIMD with the port's defaults (initial 10, backoff 0.9). It never moves:
//     the port's WindowedLimit closes a window only when a sample's in-flight count exceeds its
//     windowSize (10), where the Java original counts samples, so a limit of 10 never sees a window.
func NetflixRules() []struct {
	Name string
	New  func() sim.Admitter
} {
	windowed := func(threshold int64, delegate core.Limit) sim.Admitter {
		w, err := limit.NewWindowedLimit("sim", 1e9, 1e9, 10, threshold, delegate, core.EmptyMetricRegistryInstance)
		if err != nil {
			panic(err)
		}
		return &netflixAdmitter{lim: w}
	}
	g2 := func() core.Limit {
		return limit.NewDefaultGradient2Limit("sim", limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance)
	}
	return []struct {
		Name string
		New  func() sim.Admitter
	}{
		{"netflix-go-gradient2", func() sim.Admitter { return windowed(1e5, g2()) }},
		{"netflix-go-gradient2-default", func() sim.Admitter { return windowed(1e8, g2()) }},
		{"netflix-go-aimd", func() sim.Admitter {
			return windowed(1e5, limit.NewDefaultAIMDLimit("sim", core.EmptyMetricRegistryInstance))
		}},
	}
}

// NetflixRuns runs every scenario through the port's algorithms.
func NetflixRuns(seed uint64) (map[string]map[string]sim.Run, []string) {
	out := map[string]map[string]sim.Run{}
	var order []string
	for _, r := range NetflixRules() {
		order = append(order, r.Name)
	}
	for _, sc := range sim.Scenarios() {
		out[sc.Name] = map[string]sim.Run{}
		for _, r := range NetflixRules() {
			var clock int64
			out[sc.Name][r.Name] = sim.Closed(r.New(), &clock, sc.Clients, sc.Timeout, sc.Phases, seed)
		}
	}
	return out, order
}
