// Command wardsim drives ward's admission controls through simulated overloads and prints what
// each did: goodput, latency, refusals, time to settle, limit over time. Deterministic: the same
// seed prints the same tables.
//
//	go run ./cmd/wardsim               # the tables
//	go run ./cmd/wardsim -svg out.svg  # also the limit and p99 over time, per scenario, drawn by hand
//	go run ./cmd/wardsim -html out.html
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/wardgo/ward/sim"
)

func main() {
	seed := flag.Uint64("seed", 1, "seed of every draw")
	svgPath := flag.String("svg", "", "write the charts of limit and p99 over time to this SVG file (one per scenario, suffixed)")
	htmlPath := flag.String("html", "", "write the tables and charts to this HTML file")
	flag.Parse()

	var table bytes.Buffer
	runs := sim.WriteReport(&table, *seed, nil, nil)
	sim.WritePool(&table, *seed)
	sim.WriteShedStep(&table, *seed)
	sim.WriteFaults(&table, *seed) // the breakers through client-side faults
	os.Stdout.Write(table.Bytes())

	order := sim.Names()
	charts := map[string]string{}
	for _, sc := range sim.Scenarios() {
		var b bytes.Buffer
		sim.SVG(&b, sc, runs[sc.Name], order)
		charts[sc.Name] = b.String()
	}
	if *svgPath != "" {
		for name, svg := range charts {
			path := strings.TrimSuffix(*svgPath, ".svg") + "-" + name + ".svg"
			if err := os.WriteFile(path, []byte(svg), 0o644); err != nil {
				log.Fatal(err)
			}
			fmt.Fprintln(os.Stderr, "wrote", path)
		}
	}
	if *htmlPath != "" {
		var h strings.Builder
		h.WriteString("<!doctype html><meta charset=utf-8><title>wardsim</title><body style=\"font-family:sans-serif\">\n<pre>")
		h.WriteString(strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(table.String()))
		h.WriteString("</pre>\n")
		for _, sc := range sim.Scenarios() {
			h.WriteString(charts[sc.Name])
		}
		h.WriteString("</body>\n")
		if err := os.WriteFile(*htmlPath, []byte(h.String()), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Fprintln(os.Stderr, "wrote", *htmlPath)
	}
}
