package live_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/live"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

var screenshot = flag.String("screenshot", "", "also write TestBrowser's screenshot of the page to this PNG file")

// browser returns the headless Chromium to drive. Without one the test skips, except under CI
// (CI=true), where a missing browser fails it: CI installs Chromium (.ci/run).
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: CI must install it (apt-get install chromium; .ci/run does)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); under CI=true this fails")
	return ""
}

// headless runs Chromium on url with args added to the flags every run needs, in a fresh
// profile dir, and returns its standard output.
func headless(bin, dir, url string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + dir,
		"--virtual-time-budget=2500"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errOut.Bytes())
	}
	return out.Bytes(), nil
}

// stepClock reads one second later at every call, so that every read of the page samples.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// TestBrowser loads the page in headless Chromium against a server under load and checks what
// the page shows once its script has polled: every guard by name with its numbers, and a chart
// drawn for every series.
func TestBrowser(t *testing.T) {
	bin := browser(t)

	rule, _ := adaptive.NewFixed(2)
	lim, _ := adaptive.New(rule)
	br, err := breaker.New()
	if err != nil {
		t.Fatal(err)
	}
	sh, err := shed.New(shed.WithCPU(func() int { return 850 }))
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Stop()
	pl, err := pool.New(func(context.Context) (int, error) { return 1, nil }, func(int) {}, pool.Limits{Size: 4, Idle: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()

	page, err := live.New(live.WithClock((&stepClock{t: time.Now()}).now), live.WithHistory(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{page.Limiter("api", lim), page.Breaker("db", br), page.Shedder("door", sh), page.Pool("conns", pl)} {
		if err != nil {
			t.Fatal(err)
		}
	}

	// The server: /api holds its two slots until the test ends, so every further call is
	// refused; /db fails two calls in three behind the breaker; /door is behind the shedder;
	// /conn borrows a pooled resource.
	hold, entered := make(chan struct{}), make(chan struct{}, 2)
	var dbCalls sync.Mutex
	n := 0
	mux := http.NewServeMux()
	mux.Handle("/api", wardhttp.ProtectWith(lim, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}: // the two held calls; those admitted once the test ends pass
		default:
		}
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})))
	mux.Handle("/db", wardhttp.ProtectWith(br, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		dbCalls.Lock()
		n++
		fail := n%3 != 0
		dbCalls.Unlock()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})))
	mux.Handle("/door", wardhttp.ProtectWith(sh, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	mux.HandleFunc("/conn", func(w http.ResponseWriter, r *http.Request) {
		loan, err := pl.Acquire(r.Context())
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		loan.Release()
	})
	mux.Handle("/debug/ward/", page)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := srv.Client()

	get := func(path string) int {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 2 {
		go get("/api")
		<-entered
	}
	stop, loaded := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(2 * time.Millisecond) // paces the load; no verdict depends on it
			defer tick.Stop()
			refused, samples := 0, 0
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if get("/api") == http.StatusServiceUnavailable {
					refused++
				}
				if i == 0 && page.Sample() { // a second of the page's clock per sample: history to chart
					if samples++; samples >= 100 && refused >= 20 {
						once.Do(func() { close(loaded) })
					}
				}
				get("/db")
				get("/door")
				get("/conn")
			}
		}()
	}
	defer func() { close(stop); close(hold); wg.Wait() }()
	select {
	case <-loaded:
	case <-time.After(30 * time.Second):
		t.Fatal("the load did not get 20 refusals from /api and 100 samples within 30 s")
	}

	// Two browsers at once: one dumps the DOM its script built, the other takes the screenshot
	// README shows.
	url := srv.URL + "/debug/ward/"
	file := filepath.Join(t.TempDir(), "live.png")
	var dom []byte
	var domErr, shotErr error
	var runs sync.WaitGroup
	runs.Add(2)
	dirs := [2]string{t.TempDir(), t.TempDir()}
	go func() { defer runs.Done(); dom, domErr = headless(bin, dirs[0], url, "--dump-dom") }()
	go func() {
		defer runs.Done()
		_, shotErr = headless(bin, dirs[1], url, "--window-size=1280,760", "--screenshot="+file)
	}()
	runs.Wait()
	if domErr != nil {
		t.Fatal(domErr)
	}
	checkDOM(t, string(dom), lim.Snapshot().Refused)
	if shotErr != nil {
		t.Fatal(shotErr)
	}
	png, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("screenshot: %d bytes, %v; want a PNG of the page", len(png), err)
	}
	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	sectionRE = regexp.MustCompile(`(?s)<section class="guard" data-guard="([^"]*)">(.*?)</section>`)
	seriesRE  = regexp.MustCompile(`(?s)<div class="series" data-series="([^"]*)">.*?<span class="v">([^<]*)</span><svg[^>]*><path d="([^"]*)"[^>]*>.*?</svg>(?:<span class="total">([^<]*) total</span>)?</div>`)
	samplesRE = regexp.MustCompile(`<body[^>]*data-samples="(\d+)"`)
)

// shown is one series as the page shows it.
type shown struct{ value, path, total string }

func checkDOM(t *testing.T, dom string, refusedByNow int64) {
	t.Helper()
	m := samplesRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not render (no data-samples on body):\n%s", dom)
	}
	if k, _ := strconv.Atoi(m[1]); k < 2 {
		t.Fatalf("the page shows %d samples, want at least 2 (it polls)", k)
	}
	if strings.Contains(dom, `id="status" class="error"`) {
		t.Fatalf("the page reports an error:\n%s", dom)
	}
	guards := map[string]map[string]shown{}
	for _, g := range sectionRE.FindAllStringSubmatch(dom, -1) {
		series := map[string]shown{}
		for _, s := range seriesRE.FindAllStringSubmatch(g[2], -1) {
			series[s[1]] = shown{s[2], s[3], s[4]}
		}
		guards[g[1]] = series
	}
	num := func(guard, series string) float64 {
		t.Helper()
		s, ok := guards[guard][series]
		if !ok {
			t.Fatalf("the page shows no %q for %q; it shows %v", series, guard, guards[guard])
		}
		if !strings.HasPrefix(s.path, "M") {
			t.Fatalf("%s %s: no chart drawn (path %q)", guard, series, s.path)
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(s.value, "/s"), 64)
		if err != nil {
			t.Fatalf("%s %s shows %q, want a number", guard, series, s.value)
		}
		return v
	}
	want := map[string][]string{
		"api":   {"limit", "in flight", "latency", "refused", "admitted", "passed", "failed", "ignored"},
		"db":    {"ratio", "successes in window", "failures in window", "drops in window", "refused", "admitted", "passed", "failed", "ignored"},
		"door":  {"cpu", "in flight", "average in flight", "capacity", "hot", "refused"},
		"conns": {"lent", "idle", "live", "making", "waiting", "opened", "failed", "closed", "admitted", "refused", "abandoned", "passed", "ignored"},
	}
	for g, names := range want {
		if _, ok := guards[g]; !ok {
			t.Fatalf("the page shows no guard %q; it shows %v", g, guards)
		}
		for _, s := range names {
			num(g, s)
		}
	}
	for _, c := range []struct {
		guard, series string
		want          float64
	}{{"api", "limit", 2}, {"api", "in flight", 2}, {"door", "cpu", 85}} {
		if v := num(c.guard, c.series); v != c.want {
			t.Errorf("%s %s shows %v, want %v", c.guard, c.series, v, c.want)
		}
	}
	if r := num("db", "ratio"); r < 0 || r > 1 {
		t.Errorf("db ratio shows %v, want a fraction", r)
	}
	for _, g := range []string{"api", "db", "conns"} {
		if total, err := strconv.ParseFloat(guards[g]["admitted"].total, 64); err != nil || total < 1 {
			t.Errorf("%s admitted total shows %q, want a count of at least 1", g, guards[g]["admitted"].total)
		}
	}
	total, err := strconv.ParseFloat(guards["api"]["refused"].total, 64)
	if err != nil || total < 20 || total > float64(refusedByNow) {
		t.Errorf("api refused total shows %q, want a count in [20, %d]", guards["api"]["refused"].total, refusedByNow)
	}
}
