package manifest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestScanDocumentIsYAML: wherever the scanner reads a document, it reads
// what yaml.v3 and convertDocument make of it — the same map, the same
// first line — over every YAML file of the repository and the cases
// below; what it declines, yaml.v3 reads.
func TestScanDocumentIsYAML(t *testing.T) {
	cases := []string{
		"a: 1\nb: yes\nc: 0777\nd: ~\ne: 1.5\nf: 1e3\ng: '01'\nh: \"x y\"\ni: 2026-11-30\nj: 0x1F\n",
		"a:\n  b: {c: d, e: [1, 2, {f: g}]}\n  h: []\n  i: {}\n",
		"spec:\n  containers:\n  - name: a\n    image: r/a:1\n    args: [--x=1, -v]\n  - name: b\n",
		"list:\n- a\n- 'b'\n-\n  c: d\n- # comment\n  e: f\n",
		"a: b # comment\n# whole line\nc: 'd # not a comment'\n\n",
		"a: it''s\nb: 'it''s'\nc: -1\nd: -x\ne: a:b\nf: http://x.y/z?q=1#frag\n",
		"k: v\nk2:\n",
		"a: [b, c]  # c\nb: {x: 'y'} \n",
		"\"quoted key\": 1\n'single': 2\n",
		// declined: each must still agree with yaml.v3 where read
		"a: &x 1\nb: *x\n", "a: !!str 1\n", "a: |\n  text\n", "a: >\n  text\n", "a: b\n  c\n", "a: \"esc\\n\"\n",
		"a: 1\na: 2\n", "yes: 1\n", "1: a\n", "a:\n\t- b\n", "<<: {a: 1}\n", "a: [b,\n  c]\n", "- a\n", "a: b: c\n",
		"? a\n: b\n", "a: [b: c]\n", "a: {b: }\n", "a: [b, ]\n", "a: 'x' y\n", "a:  b  \n", "a: :b\n", "a: ?b\n",
	}
	files, err := filepath.Glob("../../examples/*/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"../../examples/*/*/*/*.yaml", "../../examples/*/*.yaml", "../*/testdata/*.yaml", "../*/testdata/*/*.yaml", "../../test/*/testdata/*.yaml", "../../test/scale/scenario/*.yaml"} {
		more, _ := filepath.Glob(g)
		files = append(files, more...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raws, ok := splitDocuments(b)
		if !ok {
			continue
		}
		for _, r := range raws {
			cases = append(cases, string(r.text))
		}
	}
	read := 0
	for _, c := range cases {
		obj, line, ok := scanDocument([]byte(c))
		if !ok {
			continue
		}
		read++
		want, wantOK := parseDocYAML("x.yaml", 1, []byte(c), 1, false)
		if !wantOK {
			t.Errorf("the scanner read what the YAML way does not:\n%s", c)
			continue
		}
		if !reflect.DeepEqual(obj, want.Object) || line != want.Line {
			t.Errorf("scanned %v (line %d), yaml.v3 %v (line %d):\n%s", obj, line, want.Object, want.Line, c)
		}
	}
	t.Logf("the scanner read %d of %d documents", read, len(cases))
	if read < len(cases)/2 {
		t.Errorf("the scanner read %d of %d documents: most manifests should be its", read, len(cases))
	}
	for _, c := range []string{"a: &x 1\nb: *x\n", "a: !!str 1\n", "a: |\n  text\n", "a: b\n  c\n", "a: 1\na: 2\n", "yes: 1\n", "a: b: c\n", "a: [b,\n  c]\n"} {
		if _, _, ok := scanDocument([]byte(c)); ok {
			t.Errorf("the scanner read what it should leave to yaml.v3:\n%s", strings.TrimSpace(c))
		}
	}
}

// FuzzScanDocument: whatever the scanner reads, yaml.v3 reads the same
// (go test -fuzz FuzzScanDocument ./pkg/manifest/).
func FuzzScanDocument(f *testing.F) {
	for _, s := range []string{"a: 1\nb: [x, {y: z}]\n", "spec:\n  c:\n  - n: a\n    i: 'b'\n", "a: b # c\nd:\n- e\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		obj, line, ok := scanDocument([]byte(c))
		if !ok {
			return
		}
		want, wantOK := parseDocYAML("x.yaml", 1, []byte(c), 1, false)
		if !wantOK {
			t.Fatalf("the scanner read what the YAML way does not: %q", c)
		}
		if !reflect.DeepEqual(obj, want.Object) || line != want.Line {
			t.Fatalf("scanned %v (line %d), yaml.v3 %v (line %d): %q", obj, line, want.Object, want.Line, c)
		}
	})
}
