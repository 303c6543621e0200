package clock

import (
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// CountWords is how many words at the start of a row [Count] reads and writes: a type that keeps
// its refusals in per-P rows of its own, beside other counts, reserves this many words for Count
// and pins one row for all of them.
const CountWords = rWords

// Counted returns the refusals [Count] has counted in a row: what [Refusals.Load] sums.
func Counted(row unsafe.Pointer) int64 { return stripe.Load(&(*countRow)(row).total) }

// Uncount takes back the last refusal [Count] counted in a row its caller has pinned: what
// [Refusals.Undo] does on the caller's own P. The pacing counts the refusals in all, so the next
// refusal is paced as the one taken back was.
func Uncount(row unsafe.Pointer) { stripe.Add(&(*countRow)(row).total, -1) }
