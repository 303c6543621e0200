package wardhttp

import (
	"net/http"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
)

// Protect puts a new adaptive limit at ward's recommended preset ([adaptive.Default]) in front of
// h: the one-expression way to protect a server.
//
//	http.ListenAndServe(":8080", wardhttp.Protect(mux))
//
// It is [Guard](adaptive.Default()) with the default [Classified] and [Refuse]: a request over the
// limit is answered 503 before h runs, and the admitted requests' response times move the limit.
// A nil h is http.DefaultServeMux, as http.Server serves it. Each call builds a limiter of its
// own: to share one limiter between handlers, or to watch it (its Snapshot, a metrics exporter, a
// live page), build it with adaptive.Default and use [ProtectWith].
func Protect(h http.Handler) http.Handler { return ProtectWith(nil, h) }

// ProtectWith puts g in front of h with the default [Classified] and [Refuse]: [Guard](g)(h)
// without the errors, which only options can produce. A nil g is a new [adaptive.Default]
// limiter, as [Protect] uses; a nil h is http.DefaultServeMux. For a classification or refusal
// of your own, use [Guard] with its options.
func ProtectWith(g ward.Guard, h http.Handler) http.Handler {
	if g == nil {
		g = adaptive.Default()
	}
	if h == nil {
		h = http.DefaultServeMux
	}
	mw, _ := Guard(g) // Guard fails only on a nil g or a bad option: neither here
	return mw(h)
}
