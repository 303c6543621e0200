package adaptive

import (
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// Event says that a limiter's limit moved. It is told by the fold that closes a window (about
// once a second with the default window), never by a call's own admission or settle.
type Event struct {
	At       int64         // the instant the window closed, in nanoseconds of the limiter's clock
	Limit    int           // the new limit
	Previous int           // the limit before
	Latency  time.Duration // the window's response time the rule learned from
}

// WithEvents calls fn when a closing window moves the limit. fn runs on the goroutine whose
// settle closed the window, while no other window can close: keep it short (count, log with
// log/slog, set a gauge) and do not block in it. A call that does not close a window pays nothing.
// A nil fn is an error.
func WithEvents(fn func(Event)) Option {
	return func(c *config) error { return contract.Hook(ErrInvalid, "WithEvents", &c.events, fn) }
}

// tell sets the limit a window learned and tells WithEvents' function when it moved. It runs
// while the caller holds closing.
func (l *Limiter) tell(now, limit, rtt int64) {
	prev := l.Limit()
	l.setLimit(limit)
	if l.events != nil && l.Limit() != prev {
		l.events(Event{At: now, Limit: l.Limit(), Previous: prev, Latency: time.Duration(rtt)})
	}
}
