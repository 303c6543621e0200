// Command instructions counts, with valgrind's callgrind, the machine instructions of one call of
// every single-goroutine path of the bench suite (bench.All), and of the floor probes
// (bench.FloorProbes): a figure no neighbour on a noisy machine can blur. From the repository:
//
//	make bench-instructions                                   # every row, the floor and the targets
//	cd bench && go run ./cmd/instructions -all -only '^Rate/'  # some rows
//
// With -all it runs itself under valgrind once per row and prints three tables: instructions per
// call of every row; the floor (each irreducible operation's own count); and, for ward's path of
// each comparison, the floor it is made of (bench.Floors), its distance to it and its target.
// Any row that was not measured, or measured implausibly, fails the run (exit status 1) and says
// why: a row never reads 0.
//
// # How a row is counted
//
// The row's process (GOGC=off, GOMAXPROCS=1, GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off: valgrind
// cannot decode the RDTSCP instruction the runtime's cycle counter uses where the CPU has it, as
// AMD's do, and a row whose harness reached it died of SIGILL) builds the implementation,
// drives it into its scenario, warms it with 1000 calls, locks its goroutine to its thread and then
// measures chunks of calls: before each chunk it yields (runtime.Gosched, so the scheduler's
// monitor, which preempts a goroutine after 10 ms without a yield, has no reason to), switches
// callgrind's collection on with a client request, makes the chunk's calls, switches it off and
// asks callgrind to dump the chunk's count. Empty chunks first measure what a chunk costs with no
// call, which is taken off every chunk. A chunk whose dump shows the goroutine leaving its path
// (runtime.newstack, runtime.mcall, runtime.schedule: a preemption or a stack growth) is dropped;
// the row is the clean chunks' instructions over their calls.
//
// Two limits of the count. Work paced by the clock (a breaker's ratio refreshed every 62.5 ms, a
// shedder's capacity) runs far more often per call under callgrind, which runs the program tens of
// times slower than the machine does: the mean counts it at that inflated rate, and the least chunk
// (the min column) is the path without it. And callgrind counts the process's own instructions
// only: under valgrind the Go runtime finds no vDSO, so a clock read ends in a clock_gettime system
// call whose kernel work is not counted; natively the vDSO's own instructions (the TSC read and its
// scaling) come on top. The clock's figure is the part of a read that Go code costs.
//
// Collection is switched by client requests rather than by --toggle-collect on the measuring
// function because the latter loses the count: when the monitor preempts the goroutine, callgrind
// sees the stack switch to the scheduler as a return from the measuring function, and the
// goroutine resumes by a jump, not a call, so collection stays off for the rest of the run. On a
// loaded machine the preemption came early enough that rows read 0.0.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/wardgo/ward/bench"
)

// Valgrind's client requests (valgrind.h and callgrind.h).
const (
	reqRunningOnValgrind = 0x1001
	reqDumpStats         = 0x43540000 // VG_USERREQ_TOOL_BASE('C','T')
	reqToggleCollect     = 0x43540002
)

func req(code uintptr) uintptr {
	args := [6]uintptr{code}
	return request(&args)
}

func main() {
	comp := flag.String("c", "Rate", "the comparison (bench.All, or Floor for the floor probes)")
	name := flag.String("impl", "ward", "the implementation")
	n := flag.Int("n", 50000, "calls measured at most, per row")
	chunks := flag.Int("chunks", 300, "chunks the calls are measured in")
	budget := flag.Float64("budget", 20000, "instructions a chunk aims at (sized from a first short chunk)")
	dumps := flag.String("dumps", "", "callgrind's output file (set by -all)")
	list := flag.Bool("list", false, "print every comparison and implementation, one a line")
	all := flag.Bool("all", false, "count every row under valgrind and print the tables")
	only := flag.String("only", "", "with -all, only the rows whose comparison/impl matches this regexp (the floor is always counted)")
	keep := flag.String("keep", "", "with -all, keep every chunk's dump in this directory, one folder per row, for callgrind_annotate")
	flag.Parse()
	rows := rows()
	switch {
	case *list:
		for _, r := range rows {
			fmt.Println(r.c.Name, r.impl.Name)
		}
	case *all:
		os.Exit(drive(rows, *only, *keep, *n, *chunks, *budget))
	default:
		for _, r := range rows {
			if r.c.Name == *comp && r.impl.Name == *name {
				if err := count(r, *n, *chunks, *budget, *dumps, *keep != ""); err != nil {
					fmt.Fprintln(os.Stderr, "instructions:", err)
					os.Exit(1)
				}
				return
			}
		}
		fmt.Fprintf(os.Stderr, "instructions: no %s/%s\n", *comp, *name)
		os.Exit(2)
	}
}

type row struct {
	c    *bench.Comparison
	impl bench.Impl
}

// rows is the floor probes, then every comparison's implementations.
func rows() []row {
	var rs []row
	for _, c := range append([]*bench.Comparison{&bench.FloorProbes}, bench.All...) {
		for _, i := range c.Impls {
			rs = append(rs, row{c, i})
		}
	}
	return rs
}

// result is what one row's process reports.
type result struct {
	instr, min, max float64 // per call: the clean chunks' mean, and their least and greatest
	clean, chunks   int
	admitted, calls int
	base            float64 // instructions of an empty chunk, taken off every chunk
	failed          string  // why the row has no figure
}

const resultFormat = "result instr=%f min=%f max=%f clean=%d chunks=%d admitted=%d calls=%d base=%f"

// count measures one row; it runs under valgrind (drive starts it so).
func count(r row, n, chunks int, budget float64, out string, keep bool) error {
	if !requests {
		return fmt.Errorf("valgrind client requests are written for amd64 only, not %s", runtime.GOARCH)
	}
	if req(reqRunningOnValgrind) == 0 {
		return fmt.Errorf("not running under valgrind: use -all, or valgrind --tool=callgrind --collect-atstart=no --compress-strings=no --callgrind-out-file=F %s -dumps F ...", os.Args[0])
	}
	if out == "" {
		return fmt.Errorf("-dumps is needed: the --callgrind-out-file valgrind was given")
	}
	call := r.impl.New()
	if r.c.Prepare != nil {
		defer r.c.Prepare(call)()
	}
	for range 1000 { // warm: first-call paths out of the count's way
		call(bench.None, r.c.Outcome)
	}
	runtime.LockOSThread() // collection is switched per thread: the goroutine stays on this one
	defer runtime.UnlockOSThread()
	d := dumper{base: out, keep: keep}

	var empty []float64
	for range 16 {
		ir, clean, err := d.chunk(call, 0, r.c.Outcome)
		if err != nil {
			return err
		}
		if clean {
			empty = append(empty, ir)
		}
	}
	if len(empty) == 0 {
		return fmt.Errorf("every empty chunk left the goroutine: no base")
	}
	base := slices.Min(empty)

	// size the chunks from a short one
	const probe = 16
	ir, _, err := d.chunk(call, probe, r.c.Outcome)
	if err != nil {
		return err
	}
	k := int(math.Max(1, math.Min(float64(n/chunks), budget/math.Max(1, (ir-base)/probe))))

	var sum, lo, hi float64
	clean, admitted := 0, 0
	lo = math.Inf(1)
	for range chunks {
		runtime.Gosched()
		ir, ok, err := d.chunk(call, k, r.c.Outcome)
		if err != nil {
			return err
		}
		admitted += d.admitted
		if !ok {
			continue
		}
		clean++
		per := (ir - base) / float64(k)
		sum += per
		lo, hi = math.Min(lo, per), math.Max(hi, per)
	}
	if clean == 0 {
		return fmt.Errorf("every one of %d chunks left the goroutine (preempted or a stack grown): nothing counted", chunks)
	}
	fmt.Printf(resultFormat+"\n", sum/float64(clean), lo, hi, clean, chunks, admitted, k*chunks, base)
	return nil
}

// dumper runs chunks between client requests and reads callgrind's dump of each.
type dumper struct {
	base     string
	keep     bool // keep the dumps (for callgrind_annotate)
	next     int  // the number callgrind gives the next dump
	admitted int  // calls the last chunk admitted
}

// leave are the functions a chunk's dump shows when its goroutine left the path measured: a
// preemption or a stack growth (newstack), a switch to the scheduler (mcall, schedule).
var leave = []string{"runtime.newstack", "runtime.mcall", "runtime.schedule"}

// chunk makes k calls with collection on, dumps and reads the count: instructions, and whether the
// goroutine stayed on its path.
func (d *dumper) chunk(call bench.Call, k int, o bench.Outcome) (float64, bool, error) {
	req(reqToggleCollect)
	ok := measure(call, k, o)
	req(reqToggleCollect)
	req(reqDumpStats)
	d.admitted = ok
	d.next++
	f := d.base + "." + strconv.Itoa(d.next)
	b, err := os.ReadFile(f)
	if err != nil {
		return 0, false, fmt.Errorf("callgrind wrote no dump for chunk %d: %v", d.next, err)
	}
	if !d.keep {
		os.Remove(f)
	}
	ir, clean, err := parseDump(b)
	if err != nil {
		return 0, false, fmt.Errorf("dump %s: %v", f, err)
	}
	return ir, clean, nil
}

// parseDump reads a callgrind dump (--compress-strings=no, --compress-pos=no): its total
// instructions, and whether none of them ran in a function of leave.
//
// The dump names every function of every context callgrind holds, most with no cost in this
// chunk: a function left the path only if it has a cost of its own here. Cost lines follow
// their fn= line; the one after a calls= line is the call's inclusive cost, not the caller's.
func parseDump(b []byte) (float64, bool, error) {
	ir, clean := -1.0, true
	fn, afterCalls := "", false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "totals:"):
			v, err := strconv.ParseFloat(strings.TrimSpace(line[len("totals:"):]), 64)
			if err != nil {
				return 0, false, fmt.Errorf("%q: %v", line, err)
			}
			ir = v
		case strings.HasPrefix(line, "fn="):
			fn, afterCalls = line[len("fn="):], false
		case strings.HasPrefix(line, "calls="):
			afterCalls = true
		case line != "" && (line[0] >= '0' && line[0] <= '9' || line[0] == '+' || line[0] == '-' || line[0] == '*'):
			if afterCalls {
				afterCalls = false
				continue
			}
			if fs := strings.Fields(line); len(fs) == 2 && fs[1] != "0" && slices.Contains(leave, fn) {
				clean = false
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, false, err
	}
	if ir < 0 {
		return 0, false, errors.New("no totals line")
	}
	return ir, clean, nil
}

// measure makes n calls: what each chunk counts.
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

// drive counts every row matching only under valgrind, prints the tables and returns the exit
// status: 1 if any row failed.
func drive(rs []row, only, keep string, n, chunks int, budget float64) int {
	re, err := regexp.Compile(only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "instructions: -only:", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "instructions:", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "instructions")
	if err != nil {
		fmt.Fprintln(os.Stderr, "instructions:", err)
		return 2
	}
	defer os.RemoveAll(dir)

	got := map[string]*result{}
	key := func(r row) string { return r.c.Name + "/" + r.impl.Name }
	var order []row
	for _, r := range rs {
		if r.c != &bench.FloorProbes && !re.MatchString(key(r)) {
			continue
		}
		order = append(order, r)
		rowDir := dir
		if keep != "" {
			rowDir = filepath.Join(keep, r.c.Name+"-"+r.impl.Name)
			if err := os.MkdirAll(rowDir, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, "instructions:", err)
				return 2
			}
		}
		got[key(r)] = run(self, rowDir, r, n, chunks, budget, keep != "")
	}
	bad := check(order, got)

	fmt.Printf("command: %s\n\n", strings.Join(os.Args, " "))
	fmt.Printf("instr/call: the clean chunks' mean; min, max: the least and greatest chunk (min leaves out work paced by the\n")
	fmt.Printf("clock, which callgrind's slowdown runs far more often per call than the machine does); clean: chunks kept\n\n")
	fmt.Printf("%-16s %-26s %12s %10s %10s %9s\n", "comparison", "impl", "instr/call", "min", "max", "clean")
	for _, r := range order {
		g := got[key(r)]
		if g.failed != "" {
			fmt.Printf("%-16s %-26s %12s  %s\n", r.c.Name, r.impl.Name, "FAILED", g.failed)
			continue
		}
		fmt.Printf("%-16s %-26s %12.1f %10.1f %10.1f %5d/%d\n", r.c.Name, r.impl.Name, g.instr, g.min, g.max, g.clean, g.chunks)
	}
	floorTable(order, got)
	return bad
}

// run counts one row in a valgrind process of its own.
func run(self, dir string, r row, n, chunks int, budget float64, keep bool) *result {
	out := filepath.Join(dir, "cg")
	cmd := exec.Command("valgrind", "--tool=callgrind", "--collect-atstart=no", "--compress-strings=no",
		"--compress-pos=no", "--callgrind-out-file="+out,
		self, "-c", r.c.Name, "-impl", r.impl.Name, "-n", strconv.Itoa(n), "-chunks", strconv.Itoa(chunks),
		"-budget", strconv.FormatFloat(budget, 'f', -1, 64), "-dumps", out)
	if keep {
		cmd.Args = append(cmd.Args, "-keep", dir)
	}
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off", "GOGC=off", "GOMAXPROCS=1")
	b, err := cmd.CombinedOutput()
	res := &result{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "result ") {
			if _, perr := fmt.Sscanf(line, resultFormat, &res.instr, &res.min, &res.max, &res.clean,
				&res.chunks, &res.admitted, &res.calls, &res.base); perr != nil {
				res.failed = fmt.Sprintf("unreadable result %q: %v", line, perr)
			}
			return res
		}
	}
	res.failed = fmt.Sprintf("no result (%v): %s", err, lastLines(string(b), 3))
	return res
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// check marks every row measured implausibly as failed and returns 1 if any row failed. A row is
// implausible when it counted too few of its chunks, when its figure is under the bare call's
// (every row makes the call), when its chunks disagree wildly on a path with no slow branch, or
// when it admitted what its scenario does not.
func check(order []row, got map[string]*result) int {
	call := got[bench.FloorProbes.Name+"/call"]
	bad := 0
	for _, r := range order {
		g := got[r.c.Name+"/"+r.impl.Name]
		switch {
		case g.failed != "":
		case g.clean*2 < g.chunks:
			g.failed = fmt.Sprintf("only %d of %d chunks stayed on the path", g.clean, g.chunks)
		case !(g.instr > 0) || g.min <= 0:
			g.failed = fmt.Sprintf("implausible count %.2f (least chunk %.2f): nothing collected", g.instr, g.min)
		case call.failed == "" && g.instr < call.instr-0.5:
			g.failed = fmt.Sprintf("implausible count %.2f: under the bare call's %.2f", g.instr, call.instr)
		case r.c.WantAdmitted == 1 && g.admitted != g.calls:
			g.failed = fmt.Sprintf("%d of %d admitted, the scenario admits all", g.admitted, g.calls)
		case r.c.WantAdmitted == 0 && g.admitted*10 > g.calls:
			g.failed = fmt.Sprintf("%d of %d admitted, the scenario refuses (nearly) all", g.admitted, g.calls)
		}
		if g.failed != "" {
			bad = 1
		}
	}
	return bad
}

// floorTable prints each irreducible operation's count and, for each comparison's ward paths,
// the floor they are made of, the distance to it and the target.
func floorTable(order []row, got map[string]*result) {
	call := got[bench.FloorProbes.Name+"/call"]
	op := map[string]float64{}
	fmt.Printf("\nfloor: each operation alone, over the bare call (the Floor rows above less Floor/call); the clock's\n")
	fmt.Printf("figure is its Go code: under valgrind there is no vDSO, and the kernel's part of the read is not counted\n")
	fmt.Printf("%-8s %10s  %s\n", "op", "instr", "what")
	for _, i := range bench.FloorProbes.Impls {
		g := got[bench.FloorProbes.Name+"/"+i.Name]
		if g.failed != "" || call.failed != "" {
			fmt.Printf("%-8s %10s  %s\n", i.Name, "FAILED", i.Note)
			continue
		}
		v := g.instr - call.instr
		if i.Name == "call" {
			v = call.instr
		}
		op[i.Name] = v
		fmt.Printf("%-8s %10.1f  %s\n", i.Name, v, i.Note)
	}

	fmt.Printf("\nward's paths against their floor and target (instructions per call)\n")
	fmt.Printf("%-14s %-20s %8s %8s %8s %8s %-5s %-28s %s\n", "comparison", "impl", "instr", "floor", "distance", "target", "met", "best peer", "floor made of")
	for _, c := range bench.All {
		f, ok := bench.Floors[c.Name]
		if !ok {
			continue
		}
		peer, peerName := math.Inf(1), "-"
		for _, i := range c.Impls {
			g := got[c.Name+"/"+i.Name]
			if g == nil || g.failed != "" || strings.HasPrefix(i.Name, "ward") {
				continue
			}
			if g.instr < peer {
				peer, peerName = g.instr, fmt.Sprintf("%s %.1f", i.Name, g.instr)
			}
		}
		for _, i := range c.Impls {
			g := got[c.Name+"/"+i.Name]
			if g == nil || i.Name != "ward" && !slices.Contains(f.Also, i.Name) {
				continue
			}
			f := f
			if own, ok := bench.Floors[c.Name+"/"+i.Name]; ok { // a row whose design differs
				f = own
			}
			floor, parts, known := 0.0, []string{}, true
			for _, p := range f.Parts {
				v, ok := op[p.Op]
				known = known && ok
				floor += p.Times * v
				parts = append(parts, fmt.Sprintf("%s×%s", strconv.FormatFloat(p.Times, 'g', 3, 64), p.Op))
			}
			if g.failed != "" || !known {
				fmt.Printf("%-14s %-20s %8s\n", c.Name, i.Name, "FAILED")
				continue
			}
			met := g.instr <= f.Target
			if bench.Refusals[c.Name] {
				met = met && g.instr < peer
			}
			fmt.Printf("%-14s %-20s %8.1f %8.1f %8.1f %8.0f %-5t %-28s %s = %s\n", c.Name, i.Name, g.instr, floor,
				g.instr-floor, f.Target, met, peerName, strings.Join(parts, " + "), f.Why)
		}
	}
}
