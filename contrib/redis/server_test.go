package wardredis_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server this test binary started: loopback only, no persistence.
type server struct {
	cmd  *exec.Cmd
	port int
}

// shared is the server every test but the fault tests uses; TestMain starts it.
var shared *server

// childEnv marks a process re-executed by TestFleet: it talks to the parent's server.
const childEnv = "WARDREDIS_CHILD"

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the fault tests make go-redis log every refused dial
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run())
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "wardredis: redis-server is not on PATH, and CI=true: the Redis tests cannot run (apt-get install redis-server)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wardredis: SKIP: redis-server is not on PATH; install it (apt-get install redis-server) to run these tests")
		os.Exit(0)
	}
	shared, err = start(path, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wardredis:", err)
		os.Exit(1)
	}
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs redis-server on port (0: a free one) and returns once it accepts connections, as
// its log says, within 10 s.
func start(path string, port int) (*server, error) {
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "notice", "--dir", os.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "Ready to accept connections") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if ok {
			return &server{cmd: cmd, port: port}, nil
		}
	case <-time.After(10 * time.Second):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("redis-server on port %d did not become ready", port)
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// stop kills the server and waits for it.
func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// client returns a client of s that respects contexts, closed when t ends.
func client(t testing.TB, s *server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: time.Second, DialerRetries: 1, DialerRetryTimeout: time.Millisecond, PoolSize: 16})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING %s: %v", s.addr(), err)
	}
	return c
}

// runs numbers each run of a test (a test run again in the same process, -count, is a new
// testing.TB), so a run again starts from fresh keys too.
var (
	runs    sync.Map // testing.TB -> int64
	counter atomic.Int64
)

// prefix returns a key prefix of this run of the test, the same for every call within it, so
// tests and runs never share keys.
func prefix(t testing.TB) string {
	id, _ := runs.LoadOrStore(t, counter.Add(1))
	return "test:" + t.Name() + ":" + strconv.FormatInt(id.(int64), 10) + ":"
}
