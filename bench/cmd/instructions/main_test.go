package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A chunk's dump as callgrind 3.19 writes it (--compress-strings=no --compress-pos=no): functions
// of other contexts listed with no cost, the path's own costs, a call's inclusive cost after its
// calls= line.
const cleanDump = `# callgrind format
version: 1
positions: line
events: Ir
summary: 20019

ob=/tmp/instr
fl=/usr/local/go/src/runtime/proc.go
fn=runtime.schedule

fn=runtime.mcall
0 0

fl=/work/main/bench/floor.go
fn=github.com/wardgo/ward/bench.init.func7.1
45 4823
cfn=github.com/wardgo/ward/bench.None
calls=689 68
45 689
45 2067

fn=main.count
cfn=runtime.newstack
calls=1 207
174 20019

totals: 20019
`

func TestParseDump(t *testing.T) {
	ir, clean, err := parseDump([]byte(cleanDump))
	if err != nil || ir != 20019 || !clean {
		t.Fatalf("parseDump(clean) = %v, %v, %v; want 20019, true, nil", ir, clean, err)
	}
	// the same dump where the scheduler ran inside the chunk: a cost of its own
	left := strings.Replace(cleanDump, "fn=runtime.schedule\n", "fn=runtime.schedule\n4143 212\n", 1)
	if ir, clean, err := parseDump([]byte(left)); err != nil || ir != 20019 || clean {
		t.Fatalf("parseDump(preempted) = %v, %v, %v; want 20019, false, nil", ir, clean, err)
	}
	if _, _, err := parseDump([]byte(strings.Replace(cleanDump, "totals: 20019\n", "", 1))); err == nil {
		t.Fatal("parseDump of a dump without totals: no error")
	}
	if _, _, err := parseDump([]byte(strings.Replace(cleanDump, "totals: 20019", "totals: x", 1))); err == nil {
		t.Fatal("parseDump of an unreadable totals line: no error")
	}
}

// TestCheck: a row with nothing collected, too few clean chunks, a count under the bare call, or
// admissions its scenario does not make fails; a plausible row passes.
func TestCheck(t *testing.T) {
	rs := rows()
	var floorCall, rate, refuse row
	for _, r := range rs {
		switch r.c.Name + "/" + r.impl.Name {
		case "Floor/call":
			floorCall = r
		case "Rate/ward":
			rate = r
		case "RateRefuse/ward":
			refuse = r
		}
	}
	good := func() *result {
		return &result{instr: 196, min: 196, max: 196, clean: 300, chunks: 300, admitted: 1000, calls: 1000}
	}
	for _, c := range []struct {
		name string
		r    row
		res  func(*result)
		fail bool
	}{
		{"plausible", rate, func(*result) {}, false},
		{"zero", rate, func(g *result) { g.instr, g.min = 0, 0 }, true},
		{"tiny least chunk", rate, func(g *result) { g.min = 0 }, true},
		{"few clean chunks", rate, func(g *result) { g.clean = 100 }, true},
		{"under the bare call", rate, func(g *result) { g.instr = 20 }, true},
		{"refused on an admission path", rate, func(g *result) { g.admitted = 999 }, true},
		{"admitted on a refusal path", refuse, func(g *result) { g.admitted = 200 }, true},
		{"refused on a refusal path", refuse, func(g *result) { g.admitted = 0 }, false},
		{"not run", rate, func(g *result) { g.failed = "no result" }, true},
	} {
		got := map[string]*result{"Floor/call": {instr: 29, min: 29, max: 29, clean: 300, chunks: 300, admitted: 1000, calls: 1000}}
		g := good()
		c.res(g)
		got[c.r.c.Name+"/"+c.r.impl.Name] = g
		if bad := check([]row{floorCall, c.r}, got); (bad == 1) != c.fail {
			t.Errorf("%s: check = %d (%q), want failure %v", c.name, bad, g.failed, c.fail)
		}
	}
}

// TestUnderValgrind counts two rows for real (the bare call and ward's token bucket), a few chunks
// each: both measured, plausible, and the bucket above the bare call it includes. Skipped where
// valgrind is not installed or the client requests are not written.
func TestUnderValgrind(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil || !requests {
		t.Skip("valgrind, or the client requests for " + runtime.GOARCH + ", not available")
	}
	bin := filepath.Join(t.TempDir(), "instructions")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var order []row
	got := map[string]*result{}
	for _, r := range rows() {
		if k := r.c.Name + "/" + r.impl.Name; k == "Floor/call" || k == "Rate/ward" {
			order = append(order, r)
			got[k] = run(bin, t.TempDir(), r, 2000, 10, 20000, false)
		}
	}
	if bad := check(order, got); bad != 0 || len(order) != 2 {
		for k, g := range got {
			t.Errorf("%s: %+v", k, *g)
		}
		t.Fatalf("check = %d over %d rows, want 0 over 2", bad, len(order))
	}
	if call, rate := got["Floor/call"], got["Rate/ward"]; !(call.instr >= 5 && rate.instr > call.instr) {
		t.Fatalf("Floor/call %.1f, Rate/ward %.1f instructions a call: want the call at least 5 and the bucket above it", call.instr, rate.instr)
	}
}
