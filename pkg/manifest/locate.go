package manifest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Locate finds the field a decode error comes from when the decoder does
// not say (custom unmarshalers — quantities, durations, times — report only
// the bad value): it removes one leaf at a time from a copy of obj and
// returns the path of the first leaf whose removal makes decode succeed,
// as "spec.containers[0].resources.requests.cpu", or "".
func Locate(obj map[string]any, decode func(map[string]any) error) string {
	var paths [][]any
	collectLeaves(obj, nil, &paths)
	for _, p := range paths {
		cp := deepCopy(obj).(map[string]any)
		removeAt(cp, p)
		if decode(cp) == nil {
			return pathString(p)
		}
	}
	return ""
}

func collectLeaves(v any, prefix []any, out *[][]any) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			collectLeaves(t[k], append(append([]any(nil), prefix...), k), out)
		}
	case []any:
		for i, x := range t {
			collectLeaves(x, append(append([]any(nil), prefix...), i), out)
		}
	default:
		*out = append(*out, prefix)
	}
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

// removeAt deletes the leaf at path (a list item becomes null, so the
// other items keep their indexes).
func removeAt(v any, path []any) {
	for i, seg := range path {
		last := i == len(path)-1
		switch t := v.(type) {
		case map[string]any:
			k, _ := seg.(string)
			if last {
				delete(t, k)
				return
			}
			v = t[k]
		case []any:
			j, _ := seg.(int)
			if last {
				t[j] = nil
				return
			}
			v = t[j]
		default:
			return
		}
	}
}

func pathString(path []any) string {
	var b strings.Builder
	for _, seg := range path {
		switch s := seg.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(s) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// ValueProblem turns a decode error of d into a Problem naming the field
// (found by Locate when the decoder does not say), its line and a fix.
func ValueProblem(d *Document, err error, decode func(map[string]any) error) Problem {
	field := Locate(d.Object, decode)
	msg := err.Error()
	fix := ValueFix(err)
	if field != "" {
		msg = strings.TrimPrefix(msg, "json: ")
		if errors.Is(err, resource.ErrFormatWrong) {
			if v, ok := valueAt(d.Object, splitPath(field)); ok {
				key := field[strings.LastIndexAny(field, ".]")+1:]
				msg = fmt.Sprintf("%q is not a Kubernetes quantity", fmt.Sprint(v))
				fix = QuantityFix(key, fmt.Sprint(v))
			}
		}
	}
	return Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field, Message: msg, Fix: fix}
}

func valueAt(v any, path []string) (any, bool) {
	for _, seg := range path {
		switch t := v.(type) {
		case map[string]any:
			x, ok := t[seg]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// ValueFix says how to write a value a decoder rejected: from the error's
// kind where its package exports one (a quantity's, a time's), else from
// its words — time.ParseDuration's error type and sigs.k8s.io/json's type
// errors are not exported, so their text is all there is to go on.
func ValueFix(err error) string {
	var timeErr *time.ParseError
	switch {
	case errors.Is(err, resource.ErrFormatWrong):
		return "write a Kubernetes quantity: cpu as 500m or 0.5, memory as 512Mi or 2Gi"
	case errors.As(err, &timeErr):
		return `write an RFC 3339 time: "2026-11-30T00:00:00Z"`
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "in duration"), strings.Contains(msg, "invalid duration"):
		return "write a duration with a unit: 30s, 15m, 24h (there is no d: a week is 168h)"
	case strings.Contains(msg, "cannot unmarshal object into") && strings.Contains(msg, "of type []"):
		return "write a list here, one item per line starting with '- ', not a map"
	case strings.Contains(msg, "cannot unmarshal array into") && !strings.Contains(msg, "of type []"):
		return "write a single value or a map here, not a list"
	}
	return "check the field's type against the Kubernetes API reference"
}
