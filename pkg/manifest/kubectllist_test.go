package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// asKubectlList prints documents as `kubectl get -o yaml` prints a List.
func asKubectlList(docs []string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nitems:\n")
	for _, d := range docs {
		for i, l := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
			switch {
			case i == 0:
				b.WriteString("- " + l + "\n")
			case l == "":
				b.WriteString("\n")
			default:
				b.WriteString("  " + l + "\n")
			}
		}
	}
	b.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	return b.String()
}

// TestFastListParseMatchesGeneral: kubectl-style Lists read item by item
// give the documents, objects and field lines that one decoder gives.
func TestFastListParseMatchesGeneral(t *testing.T) {
	var inputs []string
	var all []string
	for _, root := range []string{"../../examples", "testdata", "../../test"} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || strings.Contains(string(b), "{{") {
				return nil
			}
			var docs []string
			for _, d := range strings.Split(string(b), "\n---\n") {
				if hasContent([]byte(d)) && !strings.HasPrefix(strings.TrimSpace(d), "---") {
					docs = append(docs, d)
				}
			}
			if len(docs) > 0 {
				inputs = append(inputs, asKubectlList(docs))
				all = append(all, docs...)
			}
			return nil
		})
	}
	if len(inputs) < 10 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	big := asKubectlList(all)
	inputs = append(inputs,
		"# a dump\n---\n"+big+"---\n"+inputs[0],
		inputs[1]+"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
		strings.ReplaceAll(inputs[2], "\n", "\r\n"),
	)
	paths := []string{"", "metadata.name", "spec", "spec.template.spec.requirements[1].values", "spec.template.spec.containers[0].resources.requests",
		"spec.disruption.budgets[0].nodes", "spec.replicas", "spec.selector.matchLabels", "data", "nope.nope"}
	fast := 0
	for i, in := range inputs {
		file := fmt.Sprintf("input-%d.yaml", i)
		want, wantErr := parseGeneral(file, []byte(in))
		got, ok := parseFast(file, []byte(in))
		if !ok {
			continue
		}
		fast++
		if wantErr != nil {
			t.Errorf("%s: fast path read input the decoder rejects: %v", file, wantErr)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d documents, want %d", file, len(got), len(want))
			continue
		}
		for j := range want {
			g, w := got[j], want[j]
			if g.File != w.File || g.Doc != w.Doc || g.Line != w.Line || g.APIVersion != w.APIVersion || g.Kind != w.Kind || g.Name != w.Name || g.Namespace != w.Namespace {
				t.Errorf("%s item %d: got %s/%d line %d %s %s %s/%s, want %s/%d line %d %s %s %s/%s", file, j,
					g.File, g.Doc, g.Line, g.APIVersion, g.Kind, g.Namespace, g.Name, w.File, w.Doc, w.Line, w.APIVersion, w.Kind, w.Namespace, w.Name)
			}
			if !reflect.DeepEqual(g.Object, w.Object) {
				t.Errorf("%s item %d (%s %s): objects differ", file, j, w.Kind, w.Name)
			}
			for _, p := range paths {
				if gl, wl := g.LineOf(p), w.LineOf(p); gl != wl {
					t.Errorf("%s item %d (%s %s): line of %q %d, want %d", file, j, w.Kind, w.Name, p, gl, wl)
				}
			}
		}
	}
	if fast < len(inputs)-1 {
		t.Errorf("the fast path read %d of %d inputs", fast, len(inputs))
	}
}

func TestFastListParseDeclines(t *testing.T) {
	list := asKubectlList([]string{"apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n"})
	for name, in := range map[string]string{
		"directive":         "%YAML 1.2\n---\n" + list,
		"document end":      list + "...\n",
		"separator comment": list + "--- # next\n" + list,
		"empty document":    list + "---\n# nothing\n---\n" + list,
		"flow items":        "apiVersion: v1\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: a}}]\nkind: List\n",
		"indented items":    "apiVersion: v1\nitems:\n  - apiVersion: v1\n    kind: Pod\nkind: List\n",
		"comment in items":  strings.Replace(list, "\n  kind: Pod", "\n# c\n  kind: Pod", 1),
		"bad item":          strings.Replace(list, "kind: Pod", "kind: [Pod", 1),
		"duplicate key":     strings.Replace(list, "kind: Pod", "kind: Pod\n  kind: Pod", 1),
	} {
		if _, ok := parseFast("x.yaml", []byte(in)); ok {
			t.Errorf("%s: the fast path read it", name)
		}
	}
	if _, ok := parseFast("x.yaml", []byte(list)); !ok {
		t.Error("the fast path declined a kubectl List")
	}
	// Documents that are not Lists are read the fast way too, as the
	// general way reads them (a PodList is not expanded by either).
	for name, in := range map[string]string{
		"no list":    "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n",
		"not a List": strings.Replace(list, "kind: List", "kind: PodList", 1),
	} {
		got, ok := parseFast("x.yaml", []byte(in))
		want, err := parseGeneral("x.yaml", []byte(in))
		if !ok || err != nil || len(got) != len(want) {
			t.Errorf("%s: fast path ok %v, %d documents; the general way %d (%v)", name, ok, len(got), len(want), err)
			continue
		}
		for i := range want {
			if got[i].Kind != want[i].Kind || got[i].Name != want[i].Name || got[i].Line != want[i].Line || !reflect.DeepEqual(got[i].Object, want[i].Object) {
				t.Errorf("%s: document %d differs from the general way's", name, i)
			}
		}
	}
}

// TestEachIsParse: Each hands out the documents Parse returns, in order,
// the fast way and the general way (a document the fast way declines,
// after more than a window of others), and stops at fn's error.
func TestEachIsParse(t *testing.T) {
	var b strings.Builder
	for i := 0; i < eachWindow+10; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {k: v}\n", i)
	}
	fast := b.String()
	general := fast + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: tagged}\ndata: {k: !!str 1}\n" // a tag: beyond the fast way
	for name, in := range map[string]string{"fast": fast, "general": general} {
		want, err := Parse("x.yaml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var got []*Document
		if err := Each("x.yaml", []byte(in), func(d *Document) error { got = append(got, d); return nil }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d documents, Parse %d", name, len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].Line != want[i].Line || got[i].Doc != want[i].Doc || !reflect.DeepEqual(got[i].Object, want[i].Object) {
				t.Errorf("%s: document %d: %s line %d, Parse's %s line %d", name, i, got[i].Name, got[i].Line, want[i].Name, want[i].Line)
			}
		}
	}
	stop := errors.New("enough")
	n := 0
	if err := Each("x.yaml", []byte(fast), func(*Document) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("fn's error: %v after %d documents, want it after 1", err, n)
	}
	if err := Each("x.yaml", []byte(fast+"---\nkind: [\n"), func(*Document) error { return nil }); err == nil {
		t.Error("a syntax error after a window of documents: no problem returned")
	}
}

// BenchmarkParseManyDocuments: issue 27's big input — a multi-document
// file of Deployments (20,000 here; the 122,962 are 54 MB) read by
// Parse. MB/s is the file's size over the time.
func BenchmarkParseManyDocuments(b *testing.B) {
	var buf strings.Builder
	for i := 0; i < 20000; i++ {
		if i > 0 {
			buf.WriteString("---\n")
		}
		fmt.Fprintf(&buf, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d
  namespace: ns-%d
  labels: {app: app-%d}
spec:
  replicas: 2
  selector:
    matchLabels: {app: app-%d}
  template:
    metadata:
      labels: {app: app-%d}
    spec:
      containers:
      - name: main
        image: registry.example.com/app:%d
        resources:
          requests: {cpu: 100m, memory: 128Mi}
`, i, i%50, i, i, i, i)
	}
	data := []byte(buf.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		docs, err := Parse("deployments.yaml", data)
		if err != nil || len(docs) != 20000 {
			b.Fatalf("%d documents, %v", len(docs), err)
		}
	}
}
