package wardhttp

import (
	"net/http"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/rate"
)

// Quota admits one call for a key, or says how long until one would pass (0 when it cannot say).
// [PerKey] builds one from a rate.Partitioned, [Shared] from one limiter for every key; any
// function of this shape will do.
type Quota func(key string) (ok bool, wait time.Duration)

// PerKey is a [Quota] that gives each key an allowance of its own from t, at the instants now
// reads (the clock of the limiters t makes; nil is an error). A refusal carries the key's wait
// when its limiter knows it (a rate.Taker: a rate.BucketLimiter, SlidingLimiter,
// PeriodLimiter or pure Bucket, Sliding, Period per key), so its 429 has a Retry-After; a key
// guarded by another rate.Permit (a Gate, a Chain) is refused without one.
func PerKey[P rate.Permit](t *rate.Partitioned[P], now func() int64) (Quota, error) {
	if t == nil {
		return nil, contract.Field(ErrInvalid, "PerKey", "nil", "a *rate.Partitioned")
	}
	if now == nil {
		return nil, contract.Field(ErrInvalid, "PerKey now", "nil", "a clock")
	}
	return func(key string) (bool, time.Duration) { return t.Take(key, now(), 1) }, nil
}

// Shared is a [Quota] that spends every key's calls from one limiter: a rate.BucketLimiter,
// SlidingLimiter or PeriodLimiter (any rate.Limiter). Its refusals carry the limiter's wait.
func Shared(l rate.Limiter) (Quota, error) {
	if l == nil {
		return nil, contract.Field(ErrInvalid, "Shared", "nil", "a limiter")
	}
	return func(string) (bool, time.Duration) { return l.TakeAt(l.Now(), 1) }, nil
}

// Rate admits a request while its key's quota allows, before the handler runs; a refusal is a 429
// with Retry-After when the quota knows the wait. Nothing is settled after the handler: a quota
// counts calls, not outcomes.
func Rate(q Quota, key KeyFunc, opts ...Option) (Middleware, error) {
	if q == nil {
		return nil, contract.Field(ErrInvalid, "Rate", "nil", "a Quota")
	}
	if key == nil {
		return nil, contract.Field(ErrInvalid, "Rate key", "nil", "a KeyFunc")
	}
	c, err := newConfig(Classified, opts)
	if err != nil {
		return nil, err
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ok, wait := q(key(r)); !ok {
				c.refuse(w, r, Refusal{Err: rate.ErrLimited, Status: http.StatusTooManyRequests, Wait: wait})
				return
			}
			h.ServeHTTP(w, r)
		})
	}, nil
}
