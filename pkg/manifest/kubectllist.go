package manifest

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	yamlv3 "go.yaml.in/yaml/v3"
)

// A `kubectl get -o yaml` dump is one List document of tens of megabytes.
// Parsed whole, its YAML node tree is many times the text and is built on
// one core (pkg/sim's BenchmarkLoadDump50MB measures a large dump's load). kubectl prints a List in one
// layout — top-level keys at column 0, items as a block sequence at column
// 0, each item's lines indented by two — so its items can be cut apart as
// text and parsed one by one, in parallel, each tree dropped as soon as it
// is converted. parseFast does that and declines (ok false) for anything
// else, which Parse then reads the general way; the result is the same.

// rawDoc is one YAML document of a file as text.
type rawDoc struct {
	text []byte
	line int // the file's line number of text's first line
}

// splitDocuments cuts a YAML stream at its "---" lines. ok is false for a
// stream whose documents it cannot cut with certainty: directives, "..."
// ends, "---" with content after it, or a document with no content (the
// decoder's numbering of those is its own).
func splitDocuments(data []byte) (docs []rawDoc, ok bool) {
	start, startLine := 0, 1
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := bytes.TrimRight(data[off:next], "\r\n")
		switch {
		case bytes.HasPrefix(l, []byte("%")), bytes.HasPrefix(l, []byte("...")):
			return nil, false
		case bytes.HasPrefix(l, []byte("---")):
			if len(bytes.TrimRight(l, " ")) != 3 {
				return nil, false
			}
			if seg := data[start:off]; hasContent(seg) {
				docs = append(docs, rawDoc{text: seg, line: startLine})
			} else if len(docs) > 0 {
				return nil, false // an empty document between two others
			}
			start, startLine = next, line+1
		}
		off = next
	}
	if seg := data[start:]; hasContent(seg) {
		docs = append(docs, rawDoc{text: seg, line: startLine})
	} else if len(docs) > 0 && start < len(data) {
		return nil, false
	}
	return docs, true
}

// hasContent: some line is neither blank nor a comment.
func hasContent(b []byte) bool {
	for len(b) > 0 {
		l, rest, _ := bytes.Cut(b, []byte("\n"))
		if t := bytes.TrimLeft(l, " \t\r"); len(t) > 0 && t[0] != '#' {
			return true
		}
		b = rest
	}
	return false
}

// listItem is one item of a List as its own document text.
type listItem struct {
	text []byte
	line int // the file's line number of text's first line
}

// splitKubectlList cuts a List document in kubectl's layout into its items
// (de-indented by the two columns of "- ") and the rest of the document
// with "items: []" in their place. ok is false for any other layout.
// Its complexity is one pass over the lines with a case for each rule
// of kubectl's layout; split, the scanner's state would be passed around.
func splitKubectlList(doc rawDoc) (skeleton []byte, items []listItem, ok bool) {
	var cur *bytes.Buffer
	inItems, sawKind := false, false
	lineNo := doc.line
	var sk bytes.Buffer
	flush := func() {
		if cur != nil {
			items[len(items)-1].text = cur.Bytes()
			cur = nil
		}
	}
	for rest := doc.text; len(rest) > 0; lineNo++ {
		l, r, _ := bytes.Cut(rest, []byte("\n"))
		rest = r
		switch {
		case inItems && bytes.HasPrefix(l, []byte("- ")):
			flush()
			cur = &bytes.Buffer{}
			items = append(items, listItem{line: lineNo})
			cur.Write(l[2:])
			cur.WriteByte('\n')
		case inItems && cur != nil && bytes.HasPrefix(l, []byte("  ")):
			cur.Write(l[2:])
			cur.WriteByte('\n')
		case inItems && cur != nil && len(bytes.TrimRight(l, " \r")) == 0:
			cur.WriteByte('\n') // a blank line inside an item
		case len(l) > 0 && l[0] != ' ' && l[0] != '#' && l[0] != '-' && bytes.IndexByte(l, ':') > 0:
			// a top-level key ends the items
			flush()
			inItems = false
			key, value, _ := bytes.Cut(l, []byte(":"))
			value = bytes.TrimSpace(value)
			switch string(key) {
			case "items":
				if len(value) > 0 || items != nil {
					return nil, nil, false
				}
				inItems = true
				items = []listItem{}
				sk.WriteString("items: []\n")
				continue
			case "kind":
				sawKind = string(value) == "List"
			}
			sk.Write(l)
			sk.WriteByte('\n')
		case !inItems && (len(l) == 0 || l[0] == ' '):
			sk.Write(l) // the value of a top-level key (metadata)
			sk.WriteByte('\n')
		default:
			return nil, nil, false
		}
	}
	flush()
	if !sawKind || items == nil {
		return nil, nil, false
	}
	return sk.Bytes(), items, true
}

// parseFast is Parse for input that splitDocuments and, for Lists,
// splitKubectlList can cut; ok false sends the caller the general way,
// including for any input with a problem to report. The documents (a
// List's items each) are parsed in parallel and keep their text, not
// their YAML trees: a file of a hundred thousand Deployments would
// otherwise hold gigabytes of nodes.
func parseFast(file string, data []byte) (docs []*Document, ok bool) {
	pieces, ok := fastPieces(file, data)
	if !ok {
		return nil, false
	}
	if len(pieces) == 1 { // one document: nothing to share out
		d, ok := parseDocText(file, pieces[0].doc, pieces[0].text, pieces[0].line, keepTree)
		if !ok || isList(d) {
			return nil, false
		}
		return []*Document{d}, true
	}
	return parsePieces(file, pieces)
}

// piece is a document's text (or a List item's) the fast way parses.
type piece struct {
	doc  int
	text []byte
	line int
	item bool // a List's item (not expanded again, as the general way)
}

// fastPieces cuts data into the pieces the fast way parses one by one:
// its documents, a kubectl List's items each; ok false when it cannot.
func fastPieces(file string, data []byte) ([]piece, bool) {
	raws, ok := splitDocuments(data)
	if !ok {
		return nil, false
	}
	var pieces []piece
	for i, raw := range raws {
		skeleton, items, isList := splitKubectlList(raw)
		if !isList {
			pieces = append(pieces, piece{i + 1, raw.text, raw.line, false})
			continue
		}
		list, ok := parseDocText(file, i+1, skeleton, raw.line, keepTree)
		if !ok || list.Kind != "List" || list.APIVersion != "v1" {
			return nil, false
		}
		for _, it := range items {
			pieces = append(pieces, piece{i + 1, it.text, it.line, true})
		}
	}
	return pieces, true
}

// parsePieces parses pieces in parallel, in their order; ok false when
// one is beyond the fast way.
func parsePieces(file string, pieces []piece) ([]*Document, bool) {
	parsed := make([]*Document, len(pieces))
	var failed atomic.Bool
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Go(func() {
			for j := range work {
				if failed.Load() {
					continue
				}
				d, ok := parseDocText(file, pieces[j].doc, pieces[j].text, pieces[j].line, dropTree)
				if !ok || !pieces[j].item && isList(d) { // a List in another layout: the general way expands it
					failed.Store(true)
					continue
				}
				parsed[j] = d
			}
		})
	}
	for j := range pieces {
		work <- j
	}
	close(work)
	wg.Wait()
	if failed.Load() {
		return nil, false
	}
	return parsed, true
}

// treeUse says whether a parsed document keeps its YAML tree.
type treeUse bool

const (
	keepTree treeUse = true
	dropTree treeUse = false
)

// parseDocText parses the text of one document whose first line is the file's
// line `line`. A document that keeps its tree has its lines shifted to the
// file's; one that does not re-reads its text when a line is asked for.
func parseDocText(file string, doc int, text []byte, line int, tree treeUse) (*Document, bool) {
	if tree == dropTree {
		if obj, first, ok := scanDocument(text); ok {
			d := newDocument(file, doc, nil, obj)
			d.Line = first + line - 1
			d.src, d.srcLine = text, line
			return d, true
		}
	}
	return parseDocYAML(file, doc, text, line, tree)
}

// parseDocYAML is parseDocText through yaml.v3's tree.
func parseDocYAML(file string, doc int, text []byte, line int, tree treeUse) (*Document, bool) {
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(text, &n); err != nil || len(n.Content) != 1 {
		return nil, false
	}
	root := n.Content[0]
	if root.Kind != yamlv3.MappingNode || findDuplicateKey(root) != nil {
		return nil, false
	}
	obj, ok := convertDocument(&n)
	if !ok {
		return nil, false
	}
	if tree == dropTree {
		d := newDocument(file, doc, nil, obj)
		d.Line = n.Line + line - 1
		d.src, d.srcLine = text, line
		return d, true
	}
	shiftLines(&n, line-1)
	return newDocument(file, doc, &n, obj), true
}

// shiftLines adds by to the line of every node of a tree.
func shiftLines(n *yamlv3.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// tree is the document's YAML tree, re-read from its text if it was not
// kept.
func (d *Document) tree() *yamlv3.Node {
	if d.node != nil || d.src == nil {
		return d.node
	}
	var n yamlv3.Node
	if yamlv3.Unmarshal(d.src, &n) != nil {
		return nil
	}
	shiftLines(&n, d.srcLine-1)
	return &n
}

// isList reports whether d is a List Parse expands (kind List, a v1
// apiVersion).
func isList(d *Document) bool {
	return d.Kind == "List" && strings.HasSuffix(d.APIVersion, "v1")
}
