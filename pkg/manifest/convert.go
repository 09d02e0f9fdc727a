package manifest

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
)

// convertDocument turns a parsed YAML document straight into the
// map[string]any that toJSONMapSlow gets by re-encoding it (go.yaml.in/yaml/v3),
// reading the text back as sigs.k8s.io/yaml.YAMLToJSON does (YAML 1.1
// scalars through go.yaml.in/yaml/v2: yes is true, 0777 is 511) and decoding
// the JSON with int64 and float64 numbers. The three passes cost most of a
// large file's load (BenchmarkLoadDump50MB in pkg/sim). ok is false for input whose round trip it does not reproduce
// exactly — explicit tags, aliases, merge keys, keys that are not strings,
// folded block scalars, invalid UTF-8, NaN or infinity — which the caller
// converts the slow way.
func convertDocument(n *yamlv3.Node) (obj map[string]any, ok bool) {
	if n.Kind == yamlv3.DocumentNode {
		if len(n.Content) != 1 {
			return nil, false
		}
		n = n.Content[0]
	}
	if n.Kind != yamlv3.MappingNode {
		return nil, false
	}
	v, ok := convertNode(n, false, 0)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

// maxConvertDepth stays well inside the depth limits of the slow path's
// decoders, so that what converts here would have converted there.
const maxConvertDepth = 1000

// Its complexity is one case per YAML node kind and tag it converts.
func convertNode(n *yamlv3.Node, inFlow bool, depth int) (any, bool) {
	if depth > maxConvertDepth || n.Style&yamlv3.TaggedStyle != 0 {
		return nil, false
	}
	switch n.Kind {
	case yamlv3.MappingNode:
		if n.Tag != "!!map" {
			return nil, false
		}
		inFlow = inFlow || n.Style&yamlv3.FlowStyle != 0
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, ok := convertKey(n.Content[i])
			if !ok {
				return nil, false
			}
			if _, dup := m[k]; dup {
				return nil, false
			}
			v, ok := convertNode(n.Content[i+1], inFlow, depth+1)
			if !ok {
				return nil, false
			}
			m[k] = v
		}
		return m, true
	case yamlv3.SequenceNode:
		if n.Tag != "!!seq" {
			return nil, false
		}
		inFlow = inFlow || n.Style&yamlv3.FlowStyle != 0
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, ok := convertNode(c, inFlow, depth+1)
			if !ok {
				return nil, false
			}
			s[i] = v
		}
		return s, true
	case yamlv3.ScalarNode:
		if !utf8.ValidString(n.Value) || n.Style&yamlv3.FoldedStyle != 0 {
			return nil, false // re-encoded as !!binary; folded, not always read back the same
		}
		if n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 ||
			strings.Contains(n.Value, "\n") {
			return n.Value, true // re-encoded quoted or as a block: a string
		}
		if n.Value == "" && inFlow {
			return "", true // re-encoded as '' (an empty plain scalar is not allowed in flow)
		}
		return plainToJSON(n.Value)
	}
	return nil, false // an alias
}

// convertKey: a mapping key the round trip keeps as the same string.
func convertKey(k *yamlv3.Node) (string, bool) {
	if k.Kind != yamlv3.ScalarNode || k.Style&(yamlv3.TaggedStyle|yamlv3.FoldedStyle) != 0 || !utf8.ValidString(k.Value) {
		return "", false
	}
	if k.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 ||
		strings.Contains(k.Value, "\n") {
		return k.Value, true
	}
	if k.Value == "<<" {
		return "", false // a merge key
	}
	v, isString := resolvePlainV2(k.Value)
	if !isString {
		return "", false
	}
	return v.(string), true
}

// plainToJSON reads a plain scalar as go.yaml.in/yaml/v2 does, then as it
// comes out of JSON: int64, float64, bool, nil or string.
func plainToJSON(s string) (any, bool) {
	v, _ := resolvePlainV2(s)
	switch t := v.(type) {
	case int64:
		return t, true
	case uint64: // above MaxInt64: JSON gives it back as a float
		f, err := strconv.ParseFloat(strconv.FormatUint(t, 10), 64)
		return f, err == nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, false // JSON has no NaN or infinity: the slow path says so
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false
		}
		js := string(b)
		if !strings.Contains(js, ".") {
			if i, err := strconv.ParseInt(js, 10, 64); err == nil {
				return i, true
			}
		}
		f, err := strconv.ParseFloat(js, 64)
		return f, err == nil
	}
	return v, true // string, bool, nil
}

// resolvePlainV2 is go.yaml.in/yaml/v2's resolve for an untagged plain
// scalar, decoded into an interface{}: ints as int64 (or uint64 above
// MaxInt64), timestamps kept as strings. isString reports a string result.
// Its complexity follows yaml.v2's resolve, case for case, so that
// the two can be compared line by line.
func resolvePlainV2(in string) (v any, isString bool) {
	if in == "" {
		return nil, false
	}
	switch in {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, false
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, false
	case "~", "null", "Null", "NULL":
		return nil, false
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), false
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), false
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), false
	}
	switch c := in[0]; {
	case c == '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return f, false
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if isTimestampV2(in) {
			return in, true
		}
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, false
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return u, false
		}
		if isYAMLStyleFloat(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, false
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return i, false
			}
			if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return u, false
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return i, false
			}
		}
	}
	return in, true
}

// isYAMLStyleFloat matches go.yaml.in/yaml/v2's
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ without a regexp.
func isYAMLStyleFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// timestampFormatsV2 are the layouts go.yaml.in/yaml/v2 reads as a
// timestamp (and, decoding into an interface{}, keeps as the string).
var timestampFormatsV2 = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func isTimestampV2(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range timestampFormatsV2 {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}
