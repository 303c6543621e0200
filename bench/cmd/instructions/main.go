// Command instructions runs one implementation of one comparison of the bench suite from a single
// goroutine, n calls inside the function measure, for valgrind's callgrind to count the machine
// instructions of those calls alone:
//
//	valgrind --tool=callgrind --toggle-collect=main.measure ./instructions -c Rate -impl ward -n 200000
//
// Instructions per call are the collected total over n: a figure no neighbour on a noisy machine
// can blur. Run it with GODEBUG=asyncpreemptoff=1: callgrind asserts on the signal the Go
// runtime's asynchronous preemption sends (valgrind 3.19, threads.c vgCallgrind_post_signal). The
// script instructions.sh runs every single-goroutine path this way.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wardgo/ward/bench"
)

func main() {
	comp := flag.String("c", "Rate", "the comparison (bench.All)")
	name := flag.String("impl", "ward", "the implementation")
	n := flag.Int("n", 100000, "calls measured")
	list := flag.Bool("list", false, "print every comparison and implementation, one a line")
	flag.Parse()
	for _, c := range bench.All {
		if *list {
			for _, i := range c.Impls {
				fmt.Println(c.Name, i.Name)
			}
			continue
		}
		if c.Name != *comp {
			continue
		}
		for _, i := range c.Impls {
			if i.Name != *name {
				continue
			}
			call := i.New()
			if c.Prepare != nil {
				defer c.Prepare(call)()
			}
			for range 1000 { // warm: first-call paths out of the count's way
				call(bench.None, c.Outcome)
			}
			fmt.Printf("%s/%s: %d of %d admitted\n", c.Name, i.Name, measure(call, *n, c.Outcome), *n)
			return
		}
	}
	if *list {
		return
	}
	fmt.Fprintf(os.Stderr, "instructions: no %s/%s\n", *comp, *name)
	os.Exit(2)
}

// measure makes n calls; callgrind counts only while it runs (--toggle-collect).
//
//go:noinline
func measure(call bench.Call, n int, o bench.Outcome) int {
	ok := 0
	for range n {
		if call(bench.None, o) {
			ok++
		}
	}
	return ok
}
