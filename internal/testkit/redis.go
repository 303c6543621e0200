package testkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Redis is a redis-server this process started (StartRedis): on a loopback port, with no
// persistence. The tests of the modules that talk to Redis (contrib/redis, bench) start theirs
// with it; it needs nothing but redis-server on PATH.
type Redis struct {
	cmd  *exec.Cmd
	Port int
}

// RedisPath returns where redis-server is, or an error saying how to install it.
func RedisPath() (string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server is not on PATH (apt-get install redis-server)")
	}
	return path, nil
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartRedis runs the redis-server at path on port (0: a free one), with extra arguments after the
// test settings, and returns once it accepts connections, as its log says, within 10 s.
func StartRedis(path string, port int, extra ...string) (*Redis, error) {
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "notice", "--dir", os.TempDir()}
	cmd := exec.Command(path, append(args, extra...)...)
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
			return &Redis{cmd: cmd, Port: port}, nil
		}
	case <-time.After(10 * time.Second):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("redis-server on port %d did not become ready", port)
}

// Addr returns the server's address.
func (s *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Pause stops the server's process (SIGSTOP): it keeps its port, the kernel still accepts
// connections, and nothing answers until Resume: a hung server.
func (s *Redis) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Redis) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Stop kills the server and waits for it.
func (s *Redis) Stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
