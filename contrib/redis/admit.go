package wardredis

import (
	"context"

	"github.com/wardgo/ward"
)

// Admit takes one token of the key, as [Key.Do] does, and returns the zero ward.Admission (a
// quota learns nothing from how a call ends), or the refusal Do would return: rate.ErrLimited
// with its wait, or [ErrUnavailable] under FailClosed. A ctx already done is returned as it is,
// and nothing is taken.
func (k *Key) Admit(ctx context.Context) (ward.Admission, error) {
	if err := ward.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	d, _ := k.l.take(ctx, "", k.rkey, k.e, 1)
	return ward.Admission{}, k.l.refusal(d)
}
