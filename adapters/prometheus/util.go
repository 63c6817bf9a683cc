package prometheus

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
	prom "github.com/prometheus/client_golang/prometheus"
)

// maxLoadDepth bounds the Load methods followed to the placer served, as
// chash.Fingerprint bounds the Holders it follows.
const maxLoadDepth = 16

// current returns the placer p serves now: p itself, or what its Load
// method returns, followed to a placer without one; nil if there is none.
func current(p chash.Placer) chash.Placer {
	for range maxLoadDepth {
		l, ok := p.(interface{ Load() chash.Placer })
		if !ok || isNil(p) {
			break
		}
		p = l.Load()
	}
	if isNil(p) {
		return nil
	}
	return p
}

// send sends one series; a value that cannot be one (it cannot happen
// with the label values of labelValues) is dropped rather than panicking
// in the scrape.
func send(ch chan<- prom.Metric, d *prom.Desc, t prom.ValueType, v float64, labels ...string) {
	if m, err := prom.NewConstMetric(d, t, v, labels...); err == nil {
		ch <- m
	}
}

// labelValues returns ids as label values: valid UTF-8 (Prometheus
// requires it; invalid bytes become U+FFFD) and distinct (an ID that
// collides with an earlier one after that gets a "#2", "#3", ...).
func labelValues(ids []string) []string {
	out := make([]string, len(ids))
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		v := strings.ToValidUTF8(id, "\uFFFD")
		for n := 2; seen[v]; n++ {
			v = strings.ToValidUTF8(id, "\uFFFD") + "#" + strconv.Itoa(n)
		}
		seen[v] = true
		out[i] = v
	}
	return out
}

// isNil reports whether v is nil or holds a nil pointer, such as the
// *Ring of a failed constructor.
func isNil(x any) bool {
	if x == nil {
		return true
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}
