package wardredis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wardgo/ward/breaker"
	wardredis "github.com/wardgo/ward/contrib/redis"
)

// recommended is the client the package doc recommends for a quota store.
func recommended(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           100 * time.Millisecond,
		DialerRetries:         1,
		PoolTimeout:           100 * time.Millisecond,
	}
}

// deadlines records, for every command of a client, how far off its context's deadline was
// when go-redis began it (a dial within a call runs under the same context; go-redis's own
// background dials, which no call waits for, are not counted).
type deadlines struct {
	mu      sync.Mutex
	longest time.Duration // the farthest deadline seen; an hour for a context without one
}

func (d *deadlines) see(ctx context.Context) {
	left := time.Hour
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.longest = max(d.longest, left)
	d.mu.Unlock()
}

func (d *deadlines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *deadlines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		d.see(ctx)
		return next(ctx, cmd)
	}
}

func (d *deadlines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestOutage: with the doc's recommended client and with go-redis's defaults, a server killed
// or hung costs each call at most WithTimeout's share, whatever deadline the caller brings: no
// command is sent with a later deadline, every call returns with the caller's context
// still live, and the breaker opens on the failures.
func TestOutage(t *testing.T) {
	clients := map[string]func(addr string) *redis.Options{
		"recommended": recommended,
		"defaults": func(addr string) *redis.Options {
			return &redis.Options{Addr: addr, ContextTimeoutEnabled: true}
		},
	}
	outages := map[string]func(t *testing.T, s interface {
		Stop()
		Pause() error
	}){
		"killed": func(t *testing.T, s interface {
			Stop()
			Pause() error
		}) {
			s.Stop()
		},
		"hung": func(t *testing.T, s interface {
			Stop()
			Pause() error
		}) {
			if err := s.Pause(); err != nil {
				t.Fatal(err)
			}
		},
	}
	const share = 100 * time.Millisecond // WithTimeout's default
	for cname, opts := range clients {
		for oname, outage := range outages {
			t.Run(cname+"/"+oname, func(t *testing.T) {
				s := server(t)
				c := redis.NewClient(opts(s.Addr()))
				t.Cleanup(func() { _ = c.Close() })
				seen := &deadlines{}
				c.AddHook(seen)
				l, err := wardredis.NewBucket(c, prefix(t), 1, 10, wardredis.WithBreaker(stillBreaker(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), patient)
				defer cancel()
				// the server up: a loaded machine may take longer than the share, so try again
				for i := 0; ; i++ {
					d, err := l.Take(ctx, "k", 1)
					if err == nil && d.OK {
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("the server up: %+v, %v", d, err)
					}
				}
				outage(t, s)
				seen.mu.Lock()
				seen.longest = 0
				seen.mu.Unlock()
				broken := false
				for i := 0; i < 100 && !broken; i++ {
					d, err := l.Take(ctx, "k", 1)
					if err == nil || d.OK || d.By != wardredis.Failed {
						t.Fatalf("call %d in the outage: %+v, %v", i, d, err)
					}
					if ctx.Err() != nil {
						t.Fatalf("call %d spent the caller's deadline: %v", i, err)
					}
					broken = errors.Is(err, breaker.ErrUnavailable)
				}
				if !broken {
					t.Fatalf("the breaker never opened: %+v", l.Stats())
				}
				seen.mu.Lock()
				longest := seen.longest
				seen.mu.Unlock()
				if longest > share {
					t.Fatalf("a command went out with %v before its deadline, more than the store's share %v", longest, share)
				}
			})
		}
	}
}
