package wardredis_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy forwards loopback connections to a redis-server and can hold the replies of the
// connections open at a moment, so a test orders two calls' answers as it pleases.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*pconn
}

type pconn struct {
	gate sync.Mutex                  // held while this connection's replies are held
	sent atomic.Pointer[chan []byte] // while held: each command the client sends, once forwarded
}

// newProxy starts a proxy to target, stopped when t ends.
func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			pc := &pconn{}
			p.mu.Lock()
			p.conns = append(p.conns, pc)
			p.mu.Unlock()
			wg.Add(2)
			go func() { // client to server
				defer wg.Done()
				defer srv.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := client.Read(buf)
					if n > 0 {
						if _, werr := srv.Write(buf[:n]); werr != nil {
							return
						}
						if ch := pc.sent.Load(); ch != nil {
							*ch <- append([]byte(nil), buf[:n]...)
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { // server to client, through the gate
				defer wg.Done()
				defer client.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := srv.Read(buf)
					if n > 0 {
						pc.gate.Lock()
						_, werr := client.Write(buf[:n])
						pc.gate.Unlock()
						if werr != nil {
							return
						}
					}
					if err != nil {
						if err != io.EOF {
							_ = srv.Close()
						}
						return
					}
				}
			}()
		}
	}()
	return p
}

// Addr is the proxy's address.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// hold holds the replies of every connection open now (connections opened later flow freely)
// until release is called; sent receives what the held connections send meanwhile, once it
// has reached the server.
func (p *proxy) hold() (sent <-chan []byte, release func()) {
	p.mu.Lock()
	held := append([]*pconn(nil), p.conns...)
	p.mu.Unlock()
	ch := make(chan []byte, 64)
	for _, pc := range held {
		pc.gate.Lock()
		pc.sent.Store(&ch)
	}
	return ch, func() {
		for _, pc := range held {
			pc.sent.Store(nil)
			pc.gate.Unlock()
		}
	}
}
