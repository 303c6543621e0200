package wardhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// recorder wraps a ResponseWriter to learn the status the handler answered with, and keeps every
// optional interface of the writer it wraps reachable: it implements http.Flusher, http.Hijacker,
// io.ReaderFrom and http.Pusher by delegating (through http.ResponseController where one exists),
// and Unwrap, so http.NewResponseController finds the writer's own deadlines and full-duplex mode.
// Where the wrapped writer lacks a feature, Flush does nothing, Hijack and Push return
// http.ErrNotSupported, and ReadFrom copies through Write.
type recorder struct {
	w        http.ResponseWriter
	status   int  // the first final status written; 0 before any
	hijacked bool // the handler took the connection
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.status = code
	}
	r.w.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.w.Write(p)
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

// Flush sends what is buffered to the client; it does nothing where the wrapped writer cannot.
func (r *recorder) Flush() {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	_ = http.NewResponseController(r.w).Flush()
}

// Hijack hands the connection to the handler, or returns http.ErrNotSupported.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.w).Hijack()
	if err == nil {
		r.hijacked = true
	}
	return c, rw, err
}

// ReadFrom lets the wrapped writer's ReadFrom (sendfile on a TCP connection) do the copy.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if rf, ok := r.w.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{r.w}, src)
}

// Push starts an HTTP/2 server push, or returns http.ErrNotSupported.
func (r *recorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := r.w.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

// writerOnly hides a writer's ReadFrom so io.Copy does not call back into it.
type writerOnly struct{ io.Writer }

var (
	_ http.Flusher  = (*recorder)(nil)
	_ http.Hijacker = (*recorder)(nil)
	_ io.ReaderFrom = (*recorder)(nil)
	_ http.Pusher   = (*recorder)(nil)
)
