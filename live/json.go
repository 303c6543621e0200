package live

import (
	"encoding/json"
	"math"
	"strconv"
)

// num is a float64 that is null in JSON when it is not a number.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

type jsonPage struct {
	EveryMS int64       `json:"every_ms"`
	History int         `json:"history"`
	Times   []int64     `json:"t"`
	Guards  []jsonGuard `json:"guards"`
}

type jsonGuard struct {
	Name   string       `json:"name"`
	Kind   string       `json:"kind"`
	Series []jsonSeries `json:"series"`
}

type jsonSeries struct {
	Name    string `json:"name"`
	Unit    string `json:"unit"`
	Counter bool   `json:"counter"`
	Now     num    `json:"now"`
	Total   *num   `json:"total,omitempty"`
	Values  []num  `json:"values"`
}

// JSON returns what the page shows, as the handler serves it for tools (format=json): every_ms
// and history (the Page's settings), t (the instants of the samples held, Unix milliseconds,
// oldest first) and guards, in the order they were added, each with its name, kind and series.
// A series has its name, unit, counter (whether it is a count), values aligned with t (a gauge's
// value; a counter's rate per second since the sample before, null for the first and across a
// restart), now (the latest of values) and, for a counter, total (the latest count). A value
// the guard did not report at a sample is null. It does not sample.
func (p *Page) JSON() []byte {
	p.mu.Lock()
	out := jsonPage{EveryMS: p.every.Milliseconds(), History: p.history, Times: make([]int64, p.count), Guards: []jsonGuard{}}
	first := (p.head - p.count + p.history) % p.history
	for i := range out.Times {
		out.Times[i] = p.times[(first+i)%p.history]
	}
	for _, g := range p.guards {
		jg := jsonGuard{Name: g.name, Kind: g.kind, Series: make([]jsonSeries, 0, len(g.series))}
		for _, s := range g.series {
			js := jsonSeries{Name: s.name, Unit: s.unit, Counter: s.counter, Now: num(math.NaN()), Values: make([]num, p.count)}
			for i := range js.Values {
				v := s.vals[(first+i)%p.history]
				if s.counter {
					js.Values[i] = num(math.NaN())
					if i > 0 {
						js.Values[i] = perSecond(s.vals[(first+i-1)%p.history], v, out.Times[i-1], out.Times[i])
					}
				} else {
					js.Values[i] = num(v)
				}
			}
			if p.count > 0 {
				js.Now = js.Values[p.count-1]
				if s.counter {
					t := num(s.vals[(first+p.count-1)%p.history])
					js.Total = &t
				}
			}
			jg.Series = append(jg.Series, js)
		}
		out.Guards = append(out.Guards, jg)
	}
	p.mu.Unlock()
	b, _ := json.Marshal(out) // plain structs whose numbers marshal themselves: no error
	return b
}

// perSecond is a counter's change per second from (t0, v0) to (t1, v1), instants in milliseconds:
// NaN when either count is missing, time did not move forward, or the count went down.
func perSecond(v0, v1 float64, t0, t1 int64) num {
	if math.IsNaN(v0) || math.IsNaN(v1) || t1 <= t0 || v1 < v0 {
		return num(math.NaN())
	}
	return num((v1 - v0) / (float64(t1-t0) / 1000))
}
