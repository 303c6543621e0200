package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/puddle/v2"

	upool "github.com/wardgo/ward/bench/user/pool"
)

// BenchmarkPoolIdle is Acquire+Release of an idle resource, from every P at once (-cpu 1,2,4).
func BenchmarkPoolIdle(b *testing.B) {
	for _, impl := range []string{"ward", "puddle"} {
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			switch impl {
			case "ward": // as a user's package calls it (package user/pool)
				borrow, closePool, err := upool.Borrow(64)
				if err != nil {
					b.Fatal(err)
				}
				defer closePool()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						if err := borrow(ctx, None); err != nil {
							b.Fatal(err)
						}
					}
				})
			case "puddle":
				p, _ := puddle.NewPool(&puddle.Config[*Conn]{
					Constructor: func(context.Context) (*Conn, error) { return &Conn{}, nil },
					Destructor:  func(*Conn) {}, MaxSize: 64,
				})
				defer p.Close()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						r, err := p.Acquire(ctx)
						if err != nil {
							b.Fatal(err)
						}
						r.Release()
					}
				})
			}
		})
	}
}

// BenchmarkPoolContended is Size 8 shared by 64 goroutines: ns per acquire+release, throughput
// and the 99th percentile of the wait for a resource.
func BenchmarkPoolContended(b *testing.B) {
	for _, impl := range []string{"ward", "puddle"} {
		b.Run("impl="+impl, func(b *testing.B) {
			borrow, closePool := PoolImpls(8)[impl]()
			defer closePool()
			b.ReportAllocs()
			start := time.Now()
			waits := Contend(borrow, 64, b.N)
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
			b.ReportMetric(float64(waits[len(waits)*99/100].Nanoseconds()), "p99-wait-ns")
		})
	}
}

func TestPoolImpls(t *testing.T) {
	for name, mk := range PoolImpls(4) {
		borrow, closePool := mk()
		if w := Contend(borrow, 8, 100); len(w) != 100 {
			t.Fatalf("%s: %d waits, want 100", name, len(w))
		}
		closePool()
	}
}
