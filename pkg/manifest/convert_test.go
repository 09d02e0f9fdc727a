package manifest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// convertScalars are scalars whose reading differs between YAML 1.1 and
// 1.2, between go.yaml.in/yaml/v2 and v3, or between YAML and JSON.
var convertScalars = []string{
	"", "~", "null", "Null", "NULL", "nULL", "y", "Y", "yes", "Yes", "YES", "yEs", "n", "N", "no", "NO", "on", "On", "ON", "off", "Off",
	"true", "True", "TRUE", "tRue", "false", "False", "t", "f", "o",
	"0", "-0", "+0", "00", "0777", "-0777", "08", "0o17", "0O17", "0x1F", "0X1f", "-0x10", "+0x10", "0b101", "-0b101", "0b2", "0B101", "0x", "0b", "-0b",
	"1_000", "1__0", "_1", "1_", "0x_1F", "0b1_01", "-0b1_01", "1_0.5", "1_0e1",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "0xFFFFFFFFFFFFFFFF", "0b1111111111111111111111111111111111111111111111111111111111111111",
	"1.0", "1.", ".5", "-.5", "+.5", ".", "-.", "+", "-", "1e3", "1E3", "1e+3", "1e-3", "1.5e3", "1.e3", ".5e3", "e3", "1e", "1e400", "-1e400", "1e-400", ".5e400",
	"1e21", "1e20", "1e-7", "1e-6", "0.000001", "123456789012345678901234", "1.7976931348623157e308", "4.9e-324", "-0.0", "0.1", "3.14159", "100.50",
	".inf", ".Inf", ".INF", "+.inf", "-.inf", "-.Inf", ".nan", ".NaN", ".NAN", "inf", "nan", "Infinity", "+inf", "-inf", ".infinity", "0x1p-2", "1_0x",
	"1:20", "1:20:30", "190:20:30", "2026-10-01", "2026-10-01T00:00:00Z", "2026-10-01T00:00:00.5+02:00", "2026-1-2 3:4:5", "2026-10-01t00:00:00z",
	"2026-13-01", "20261001", "2026-10-01x", "1.2.3", "10%", "500m", "1Gi", "1e3Gi", "0.5", "-1", "+1", "--1", "1-2",
	"<<", "=", "a b", "a  b", "é", "日本語", "x y z", "abc", "a:b", "a,b", "[a]", "{a}", "a#b", "@x", "`x", "%x", "!x", "&x", "*x", "|", ">", "?x", "?", ":x",
	"---", "...", "---x", "...x", "- x", "#x", "a: b", "a #b", " lead", "trail ", "tab\there", "\x01", "\u0085", "\u2028", "\ufeff", "\x7f",
	"line\nbreak", "two\n\nbreaks", "\n", "trailing\n", "\nleading",
	strings.Repeat("word ", 40), strings.Repeat("x", 200), strings.Repeat("long key ", 130),
}

// convertDocs are documents exercising structure: flow and block styles,
// keys, tags, anchors, aliases, merges, comments and block scalars.
var convertDocs = []string{
	"a: {b: , c: 1}\n", "a: [ , ]\n", "a: [x, ]\n", "a: {b}\n", "{a: }\n", "a: [~, null, '', \"\"]\n",
	"a: foo\n\n  bar\n", "a: |\n  x\n  y\n", "a: |-\n  x\n", "a: |+\n  x\n\n", "a: >\n  x\n  y\n\n  z\n", "a: |2\n    indented\n",
	"1: a\n", "true: x\n", "null: x\n", "~: x\n", "? : x\n", "\"1\": a\n", "1.0: a\n", "0x10: a\n", "yes: a\n", "2026-10-01: a\n", ".: x\n", "'': x\n",
	"? [a, b]\n: c\n", "? {a: b}\n: c\n", "? |\n  block key\n: c\n",
	"a: !!str 1\n", "a: !!int \"1\"\n", "a: ! 12\n", "a: !foo x\n", "a: !!binary aGVsbG8=\n", "a: !!float 1\n", "a: !!map {b: 1}\n", "a: !!seq [1]\n",
	"a: &x 1\nb: *x\n", "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n", "a: &x 1\n", "<<: {a: 1}\n", "'<<': 1\n", "a: <<\n",
	"# comment\na: 1 # trailing\n# foot\n", "a:\n- b: 1\n  c: [1, 2]\n- {d: e}\n", "a: []\nb: {}\nc: [[]]\n",
	"\"quoted key\": 1\n'single': 2\n", "a: \"\\x01\\u0085\\t\"\n", "a: '  spaced  '\n", "a:\n  - - - deep\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {app: web, tier: \"1\", on: yes}\n  annotations:\n    prometheus.io/port: \"9090\"\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: 1, memory: 2e3}}\n    ports: [{containerPort: 8080}]\n",
}

// TestConvertDocumentMatchesRoundTrip: the direct conversion gives what the
// re-encoding round trip gives, or declines.
func TestConvertDocumentMatchesRoundTrip(t *testing.T) {
	var docs []string
	docs = append(docs, convertDocs...)
	for _, s := range convertScalars {
		q := strconv.Quote(s)
		docs = append(docs,
			"k: "+s+"\n", "k: "+q+"\n", "k: '"+strings.ReplaceAll(s, "'", "''")+"'\n",
			"- "+s+"\n", "k: ["+s+"]\n", "k: {x: "+s+"}\n", "k: {"+s+": x}\n",
			s+": v\n", q+": v\n", "k:\n  "+s+": v\n")
	}
	var files []string
	for _, root := range []string{"../../examples", "../../pkg", "../../test", "../../charts"} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	converted := 0
	for _, text := range docs {
		dec := yamlv3.NewDecoder(bytes.NewReader([]byte(text)))
		for {
			var n yamlv3.Node
			err := dec.Decode(&n)
			if err != nil {
				break // io.EOF, or YAML that Parse rejects before converting
			}
			if len(n.Content) == 0 || n.Content[0].Kind != yamlv3.MappingNode {
				continue
			}
			if convertCheck(t, text, &n) {
				converted++
			}
		}
	}
	if converted < len(files) {
		t.Errorf("only %d documents converted directly", converted)
	}
}

func convertCheck(t *testing.T, text string, n *yamlv3.Node) bool {
	t.Helper()
	got, ok := convertDocument(n)
	if !ok {
		return false
	}
	want, slowErr := toJSONMapSlow(n)
	if slowErr != nil {
		t.Errorf("%q: converted to %v, the round trip fails: %v", text, got, slowErr)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\n got %#v\nwant %#v", text, got, want)
	}
	return true
}

func TestYAMLStyleFloat(t *testing.T) {
	re := regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	for _, s := range append(convertScalars, "1.5e", "+.e1", "1e+", "5.", "-5.e-3", "++1", ".1.", "1ee1") {
		if got, want := isYAMLStyleFloat(s), re.MatchString(s); got != want {
			t.Errorf("isYAMLStyleFloat(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzConvertDocument(f *testing.F) {
	for _, d := range convertDocs {
		f.Add(d)
	}
	for _, s := range convertScalars {
		f.Add("k: " + s + "\n")
	}
	f.Fuzz(func(t *testing.T, text string) {
		dec := yamlv3.NewDecoder(strings.NewReader(text))
		for {
			var n yamlv3.Node
			if err := dec.Decode(&n); err != nil {
				return // io.EOF, or YAML that Parse rejects before converting
			}
			if len(n.Content) == 0 || n.Content[0].Kind != yamlv3.MappingNode || findDuplicateKey(n.Content[0]) != nil {
				continue
			}
			convertCheck(t, text, &n)
		}
	})
}
