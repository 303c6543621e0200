// Package rate is ward's token bucket as a user's program calls it: Allow, then the work (see
// package user).
package rate

import "github.com/wardgo/ward/rate"

// Bucket returns a call through a BucketLimiter of r tokens a second and the burst given, built
// with opts.
func Bucket(r float64, burst int, opts ...rate.Option) (func(work func(), outcome uint8) bool, error) {
	b, err := rate.NewBucketLimiter(r, burst, opts...)
	if err != nil {
		return nil, err
	}
	return func(work func(), _ uint8) bool {
		if !b.Allow() {
			return false
		}
		work()
		return true
	}, nil
}
