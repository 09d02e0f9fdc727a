package manifest

import (
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// lineOf finds the line of a field path (as k8s.io/apimachinery's field.Path
// prints it: a.b[2].c[key]) in a YAML document, falling back to the deepest
// ancestor that exists.
func lineOf(doc *yamlv3.Node, path string) int {
	line, _ := positionOf(doc, path)
	return line
}

// positionOf is lineOf with the column (1-based) of the same node.
func positionOf(doc *yamlv3.Node, path string) (line, column int) {
	n := doc
	if n == nil {
		return 0, 0
	}
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line, column = n.Line, n.Column
	segs := splitPath(path)
	for i := 0; i < len(segs); i++ {
		next, at := child(n, segs[i])
		// A map key with dots (memory.available, nvidia.com/gpu) reads as
		// several segments in a dotted path: join them back.
		j := i
		for next == nil && n.Kind == yamlv3.MappingNode && j+1 < len(segs) {
			j++
			next, at = child(n, strings.Join(segs[i:j+1], "."))
		}
		if next == nil {
			return line, column
		}
		i = j
		n, line, column = next, at.Line, at.Column
	}
	return line, column
}

// child returns the node under seg and the node a person would look at for
// it: the key for a mapping entry, the item for a list item.
func child(n *yamlv3.Node, seg string) (value, at *yamlv3.Node) {
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1], n.Content[i]
			}
		}
	case yamlv3.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i]
		}
	}
	return nil, nil
}

// splitPath turns "spec.a[0].labels[x.io/y]" into [spec a 0 labels x.io/y].
func splitPath(p string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range p {
		switch {
		case r == '[' && depth == 0:
			flush()
			depth++
		case r == ']' && depth == 1:
			flush()
			depth--
		case r == '.' && depth == 0:
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}
