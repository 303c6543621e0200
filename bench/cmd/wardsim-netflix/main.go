// Command wardsim-netflix prints wardsim's tables with the Netflix-style Go port's algorithms
// (github.com/platinummonkey/go-concurrency-limits v0.8.0) driven through the same scenarios, so
// ward's rules and theirs compare like with like. It lives in the bench module so that ward's own
// module never depends on the port.
package main

import (
	"flag"
	"os"

	"github.com/wardgo/ward/bench"
	"github.com/wardgo/ward/sim"
)

func main() {
	seed := flag.Uint64("seed", 1, "seed of every draw")
	flag.Parse()
	extra, order := bench.NetflixRuns(*seed)
	sim.WriteReport(os.Stdout, *seed, extra, order)
}
