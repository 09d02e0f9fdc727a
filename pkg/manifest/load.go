// Package manifest loads Kubernetes manifests (multi-document YAML) and
// validates Joiner's kinds exactly as the API server would: the generated
// CRD's OpenAPI schema, its defaults, pruning of unknown fields and its CEL
// rules, all through k8s.io/apiextensions-apiserver. Input from older
// Karpenter API versions is recognised and answered with its v1 replacement.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Document is one YAML document of a file, decoded to JSON-compatible values.
type Document struct {
	File       string
	Doc        int // 1-based
	Line       int // line of the document's first key
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	Object     map[string]any
	node       *yamlv3.Node
	// src and srcLine: the text of a document whose tree was not kept (an
	// item of a large List), read again for LineOf.
	src     []byte
	srcLine int
}

// Header is the document without its content: file, position, kind and
// name, for checks across documents after the content has been decoded.
// It keeps what LineOf reads again (the document's text, a slice of its
// file's), or its YAML tree when it has no text.
func (d *Document) Header() *Document {
	h := &Document{File: d.File, Doc: d.Doc, Line: d.Line, APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Namespace: d.Namespace,
		src: d.src, srcLine: d.srcLine}
	if d.src == nil {
		h.node = d.node
	}
	return h
}

// LineOf returns the line of a field path in the document, or of its deepest
// existing ancestor.
func (d *Document) LineOf(path string) int { return lineOf(d.tree(), path) }

// PositionOf is LineOf with the 1-based column of the same key or item.
func (d *Document) PositionOf(path string) (line, column int) { return positionOf(d.tree(), path) }

func (d *Document) problem(field, msg, fix string) Problem {
	return Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name,
		Field: field, Message: msg, Fix: fix}
}

// ParseFile reads a file and splits it into documents.
func ParseFile(path string) ([]*Document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	if inChartTemplates(path) {
		if line := helmActionLine(b, chartTemplate); line > 0 {
			return nil, Problems{helmProblem(path, line)}
		}
	}
	return Parse(path, b)
}

// Parse splits multi-document YAML into documents. Empty documents are
// skipped; a syntax error, a duplicate key or a document that is not a
// mapping is a Problem naming the line. A List (kind: List, as from kubectl
// get -o yaml) is expanded into its items. A Helm template is answered as
// one, not as broken YAML.
func Parse(file string, data []byte) ([]*Document, error) {
	if line := helmActionLine(data, plainFile); line > 0 {
		return nil, Problems{helmProblem(file, line)}
	}
	if docs, ok := parseFast(file, data); ok {
		return docs, nil
	}
	return parseGeneral(file, data)
}

// eachWindow is how many documents Each holds at once.
const eachWindow = 1024

// Each is Parse that hands the documents to fn one at a time, in order,
// holding at most a window of them: a file of a hundred thousand
// documents is never in memory whole, as content maps it would be ten
// times its size. A problem Parse would report is returned, and fn is
// not called after it; fn's error stops the walk and is returned.
func Each(file string, data []byte, fn func(*Document) error) error {
	if line := helmActionLine(data, plainFile); line > 0 {
		return Problems{helmProblem(file, line)}
	}
	pieces, ok := fastPieces(file, data)
	if !ok || len(pieces) <= 1 {
		docs, err := Parse(file, data)
		if err != nil {
			return err
		}
		return each(docs, fn)
	}
	// The next window is parsed while fn takes this one's documents.
	type window struct {
		start int
		docs  []*Document
		ok    bool
	}
	windows := make(chan window, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(windows)
		for start := 0; start < len(pieces); start += eachWindow {
			docs, ok := parsePieces(file, pieces[start:min(start+eachWindow, len(pieces))])
			select {
			case windows <- window{start, docs, ok}:
			case <-stop:
				return
			}
			if !ok {
				return
			}
		}
	}()
	for w := range windows {
		if !w.ok {
			// Beyond the fast way: the general way reads the whole file,
			// and goes on from the first document not handed out yet.
			all, err := parseGeneral(file, data)
			if err != nil {
				return err
			}
			if w.start > len(all) {
				return fmt.Errorf("%s: %d documents read the general way, %d already read the fast way", file, len(all), w.start)
			}
			return each(all[w.start:], fn)
		}
		if err := each(w.docs, fn); err != nil {
			return err
		}
	}
	return nil
}

// each calls fn with each document, letting it go after.
func each(docs []*Document, fn func(*Document) error) error {
	for i, d := range docs {
		docs[i] = nil
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// EachInFile is Each over a file's content, with ParseFile's checks.
func EachInFile(path string, fn func(*Document) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading manifest: %w", err)
	}
	if inChartTemplates(path) {
		if line := helmActionLine(b, chartTemplate); line > 0 {
			return Problems{helmProblem(path, line)}
		}
	}
	return Each(path, b, fn)
}

// parseGeneral is Parse for any input, through one YAML decoder.
func parseGeneral(file string, data []byte) ([]*Document, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var docs []*Document
	var problems Problems
	for i := 1; ; i++ {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problems = append(problems, Problem{File: file, Line: yamlErrorLine(err), Doc: i,
				Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "),
				Fix:     "fix the YAML syntax (indentation, a missing ':' or quote); `yamllint` shows the spot"})
			// The decoder cannot resynchronise after a syntax error.
			break
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yamlv3.ScalarNode && n.Content[0].Tag == "!!null") {
			continue
		}
		root := n.Content[0]
		if root.Kind != yamlv3.MappingNode {
			problems = append(problems, Problem{File: file, Line: root.Line, Doc: i,
				Message: "a manifest document must be a mapping with apiVersion, kind and metadata",
				Fix:     "start the document with apiVersion: and kind: lines"})
			continue
		}
		if dup := findDuplicateKey(root); dup != nil {
			problems = append(problems, Problem{File: file, Line: dup.Line, Doc: i,
				Message: fmt.Sprintf("key %q is already defined in this mapping", dup.Value),
				Fix:     "remove one of the two; YAML would otherwise silently keep only the last"})
			continue
		}
		obj, err := toJSONMap(&n)
		if err != nil {
			problems = append(problems, Problem{File: file, Line: root.Line, Doc: i, Message: err.Error()})
			continue
		}
		d := newDocument(file, i, &n, obj)
		if isList(d) {
			docs = append(docs, expandList(d)...)
			continue
		}
		docs = append(docs, d)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return docs, nil
}

func newDocument(file string, i int, n *yamlv3.Node, obj map[string]any) *Document {
	d := &Document{File: file, Doc: i, Object: obj, node: n}
	switch {
	case n != nil && n.Kind == yamlv3.DocumentNode && len(n.Content) > 0:
		d.Line = n.Content[0].Line // not the "---" before it
	case n != nil:
		d.Line = n.Line
	}
	d.APIVersion, _ = obj["apiVersion"].(string)
	d.Kind, _ = obj["kind"].(string)
	if md, ok := obj["metadata"].(map[string]any); ok {
		d.Name, _ = md["name"].(string)
		d.Namespace, _ = md["namespace"].(string)
	}
	return d
}

func expandList(list *Document) []*Document {
	items, _ := list.Object["items"].([]any)
	var itemNodes []*yamlv3.Node
	if root := list.node.Content[0]; root.Kind == yamlv3.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "items" && root.Content[i+1].Kind == yamlv3.SequenceNode {
				itemNodes = root.Content[i+1].Content
			}
		}
	}
	var out []*Document
	for j, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		node := &yamlv3.Node{Kind: yamlv3.DocumentNode}
		if j < len(itemNodes) {
			node.Content = []*yamlv3.Node{itemNodes[j]}
			node.Line = itemNodes[j].Line
		}
		out = append(out, newDocument(list.File, list.Doc, node, m))
	}
	return out
}

// toJSONMap converts a YAML document to the map[string]any form that
// unstructured Kubernetes objects use (int64 and float64 numbers).
func toJSONMap(n *yamlv3.Node) (map[string]any, error) {
	if obj, ok := convertDocument(n); ok {
		return obj, nil
	}
	return toJSONMapSlow(n)
}

// toJSONMapSlow converts by re-encoding the document and reading it back as
// Kubernetes reads YAML; convertDocument gives the same result directly for
// all but unusual input.
func toJSONMapSlow(n *yamlv3.Node) (map[string]any, error) {
	raw, err := yamlv3.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("re-encoding document: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid Kubernetes YAML: %w", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, fmt.Errorf("decoding document: %w", err)
	}
	return obj, nil
}

func yamlErrorLine(err error) int {
	var line int
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		_, _ = fmt.Sscanf(s[i:], "line %d", &line)
	}
	return line
}

// ManifestFiles lists the YAML files of a path: the file itself, or every
// .yaml/.yml file below a directory, sorted, so loading is deterministic.
func ManifestFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	rel, err := YAMLFiles(os.DirFS(path), ".")
	files := make([]string, len(rel))
	for i, r := range rel {
		files[i] = filepath.Join(path, r)
	}
	return files, err
}

// YAMLFiles lists every .yaml/.yml file below dir of fsys, sorted, so
// loading is deterministic.
func YAMLFiles(fsys fs.FS, dir string) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// findDuplicateKey returns the second occurrence of a repeated mapping key.
func findDuplicateKey(n *yamlv3.Node) *yamlv3.Node {
	if n.Kind == yamlv3.MappingNode {
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yamlv3.ScalarNode && k.Value != "<<" {
				if seen[k.Value] {
					return k
				}
				seen[k.Value] = true
			}
		}
	}
	for _, c := range n.Content {
		if d := findDuplicateKey(c); d != nil {
			return d
		}
	}
	return nil
}
