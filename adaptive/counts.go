package adaptive

import (
	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/tally"
)

// Counts returns the limiter's counts since New ([ward.Counts]): calls admitted (Acquire, Admit,
// Do, a PermitAdapter's Acquire, and the calls its Partitions and Queues admit) and refused, and
// the admitted calls settled by outcome (a PermitAdapter's Release counts as an Ignore). A Queue's
// first try that finds no slot is one of the limiter's refusals, whatever the Queue then does:
// the Queue's own [Queue.Counts] say what became of its calls. The counts sit in the same per-P
// rows as the credits, so keeping them costs a call a plain add on a line its P already writes;
// Counts folds the rows.
func (l *Limiter) Counts() ward.Counts { return tally.CountsOf(l.pools.All(), wCounts) }

// Latency returns the histogram of the response times of the timed calls since New: one admitted
// call in every [WithSampleEvery] (every call with 1), passed or failed; an Ignore is not timed.
// It is kept in the per-P rows, as Counts are.
func (l *Limiter) Latency() ward.Latency { return tally.LatencyOf(l.pools.All(), wLatency) }

// Counts returns this partition's counts since NewPartitions ([ward.Counts]): its calls admitted,
// refused (by the limit, or as a borrower while another partition is hungry) and settled by
// outcome. They are kept per P and folded here; the Limiter counts the same calls in its own
// Counts, except the borrowers refused for hunger, which never reach it.
func (p *Partition) Counts() ward.Counts { return tally.CountsOf(p.counts.All(), 0) }

// Partitions returns the partitions, in the order they were given to NewPartitions.
func (ps *Partitions) Partitions() []*Partition { return append([]*Partition(nil), ps.parts...) }

// Limiter returns the limiter whose limit the partitions split.
func (ps *Partitions) Limiter() *Limiter { return ps.l }

// Counts returns the Queue's counts since NewQueue ([ward.Counts]): calls admitted through it
// (at once or after waiting, [Queue.TryAcquire] included), refused (a full line, or MaxWait run
// out), abandoned (the caller's context ended while it waited), and its Slots settled by
// outcome. The Limiter counts the admitted calls too, and a first try that found no slot as a
// refusal of its own. They are kept per P and folded here.
func (q *Queue) Counts() ward.Counts { return q.counts.Counts() }

// Limiter returns the limiter the Queue waits on.
func (q *Queue) Limiter() *Limiter { return q.l }
