package lint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// Fixed is one file --fix rewrote: the old-API findings it answered, and
// those it left for a person.
type Fixed struct {
	File    string
	Applied []string
	Left    []string
}

// handMoves are migrations that move a field to another object: --fix
// leaves them (deleting the field here would lose it) and they stay
// reported.
var handMoves = map[string]string{
	"NodePool/spec.template.spec.kubelet": "move spec.template.spec.kubelet to the EC2NodeClass by hand",
	"NodeClaim/spec.kubelet":              "move spec.kubelet to the EC2NodeClass by hand",
}

// Fix rewrites the old-API input in the files below paths to its
// karpenter.sh/v1 / karpenter.k8s.aws/v1 form, as pkg/manifest's migration
// gives it: only the fields it changes are touched, in place, so comments
// and the order of everything else stay; documents without old input are
// kept byte for byte. It returns the files it changed.
func (l *Linter) Fix(paths []string) ([]Fixed, error) {
	var out []Fixed
	for _, arg := range paths {
		files, err := manifest.ManifestFiles(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (fix: name the files or directories that hold your NodePools)", arg, err)
		}
		for _, f := range files {
			fx, err := fixFile(f)
			if err != nil {
				return nil, err
			}
			if len(fx.Applied) > 0 {
				out = append(out, fx)
			}
		}
	}
	return out, nil
}

func fixFile(file string) (Fixed, error) {
	fx := Fixed{File: file}
	data, err := os.ReadFile(file)
	if err != nil {
		return fx, fmt.Errorf("reading manifest: %w", err)
	}
	chunks := manifest.Chunks(data)
	changed := false
	for i, chunk := range chunks {
		body, applied, left, err := fixDocument(file, chunk)
		if err != nil {
			return fx, err
		}
		fx.Left = append(fx.Left, left...)
		if len(applied) > 0 {
			chunks[i], changed = body, true
			fx.Applied = append(fx.Applied, applied...)
		}
	}
	if !changed {
		return fx, nil
	}
	st, err := os.Stat(file)
	if err != nil {
		return fx, err
	}
	return fx, os.WriteFile(file, bytes.Join(chunks, nil), st.Mode().Perm())
}

// splitDocuments cuts a file before each "---" line; joined, the chunks
// are the file again.

// fixDocument migrates one document's text; unchanged documents come back
// with no applied changes.
func fixDocument(file string, chunk []byte) (body []byte, applied, left []string, err error) {
	docs, perr := manifest.Parse(file, chunk)
	if perr != nil || len(docs) != 1 || !manifest.IsKarpenter(docs[0]) {
		return chunk, nil, nil, nil // lint reports what does not parse
	}
	d := docs[0]
	problems := manifest.Deprecations(d)
	if len(problems) == 0 {
		return chunk, nil, nil, nil
	}
	migrated, _ := manifest.Migrate(d)
	for _, p := range problems {
		if how, ok := handMoves[d.Kind+"/"+p.Field]; ok {
			left = append(left, fmt.Sprintf("%s %q: %s: %s", d.Kind, d.Name, p.Field, how))
			restore(migrated, d.Object, p.Field)
			continue
		}
		applied = append(applied, fmt.Sprintf("%s %q: %s", d.Kind, d.Name, firstLine(p.Message)))
	}
	if len(applied) == 0 {
		return chunk, nil, left, nil
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(chunk, &root); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := patch(root.Content[0], d.Object, migrated); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: fixing %s %q: %w", file, d.Kind, d.Name, err)
	}
	out, err := manifest.EncodeChunk(chunk, &root)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: encoding fixed %s %q: %w", file, d.Kind, d.Name, err)
	}
	return out, applied, left, nil
}

func appendComment(cs []string, c string) []string {
	if c == "" {
		return cs
	}
	return append(cs, c)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// restore puts the value at a dotted field path of old back into obj.
func restore(obj, old map[string]any, field string) {
	segs := strings.Split(field, ".")
	for _, s := range segs[:len(segs)-1] {
		o, _ := old[s].(map[string]any)
		n, _ := obj[s].(map[string]any)
		if o == nil {
			return
		}
		if n == nil {
			n = map[string]any{}
			obj[s] = n
		}
		old, obj = o, n
	}
	if v, ok := old[segs[len(segs)-1]]; ok {
		obj[segs[len(segs)-1]] = v
	}
}

// patch edits the YAML node n, which holds old, until it holds new,
// touching only what differs: keys removed, values replaced, keys added
// where the first removed key of the same mapping was (else at the end).
// Its complexity is the recursion's case per node kind (mapping,
// sequence, scalar) and per change (removed, replaced, added).
func patch(n *yamlv3.Node, old, new any) error {
	if reflect.DeepEqual(old, new) {
		return nil
	}
	switch nw := new.(type) {
	case map[string]any:
		od, ok := old.(map[string]any)
		if !ok || n.Kind != yamlv3.MappingNode {
			return replace(n, new, "")
		}
		var kept []*yamlv3.Node
		insertAt := -1
		// The comments of removed keys go to the keys that replace them.
		var head, line []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			nv, stays := nw[k.Value]
			if !stays {
				if insertAt < 0 {
					insertAt = len(kept)
				}
				head = appendComment(head, k.HeadComment)
				line = appendComment(appendComment(line, k.LineComment), v.LineComment)
				continue
			}
			if err := patch(v, od[k.Value], nv); err != nil {
				return err
			}
			kept = append(kept, k, v)
		}
		var added []string
		for k := range nw {
			if _, had := od[k]; !had {
				added = append(added, k)
			}
		}
		sort.Strings(added)
		var fresh []*yamlv3.Node
		for _, k := range added {
			v := &yamlv3.Node{}
			if err := replace(v, nw[k], k); err != nil {
				return err
			}
			fresh = append(fresh, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: k}, v)
		}
		if insertAt < 0 {
			insertAt = len(kept)
		}
		if len(fresh) > 0 {
			fresh[0].HeadComment = strings.Join(head, "\n")
			fresh[0].LineComment = strings.Join(line, " ")
		} else if len(head)+len(line) > 0 && insertAt < len(kept) {
			kept[insertAt].HeadComment = strings.Join(append(head, line...), "\n")
		} else if len(head)+len(line) > 0 {
			n.LineComment = strings.Join(appendComment(append(head, line...), n.LineComment), " ")
		}
		n.Content = slices.Concat(kept[:insertAt], fresh, kept[insertAt:])
		return nil
	case []any:
		ol, ok := old.([]any)
		if !ok || n.Kind != yamlv3.SequenceNode || len(ol) != len(nw) {
			return replace(n, new, "")
		}
		for i := range nw {
			if err := patch(n.Content[i], ol[i], nw[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return replace(n, new, "")
}

// replace makes n hold v, keeping n's comments; a scalar that needs a
// note (a placeholder, an alias to pin) gets it as its line comment.
func replace(n *yamlv3.Node, v any, key string) error {
	var fresh yamlv3.Node
	if err := fresh.Encode(v); err != nil {
		return err
	}
	if fresh.Kind == 0 {
		return errors.New("empty value")
	}
	head, line, foot := n.HeadComment, n.LineComment, n.FootComment
	style := n.Style & yamlv3.FlowStyle
	*n = fresh
	n.HeadComment, n.LineComment, n.FootComment = head, line, foot
	if n.Kind != yamlv3.ScalarNode {
		n.Style |= style
	}
	addNotes(n, key)
	return nil
}

// addNotes comments the scalars below n that a migration invented.
func addNotes(n *yamlv3.Node, key string) {
	switch n.Kind {
	case yamlv3.ScalarNode:
		if note := manifest.PlaceholderNote(key + ": " + n.Value); note != "" && n.LineComment == "" {
			n.LineComment = note
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			addNotes(n.Content[i+1], n.Content[i].Value)
		}
	case yamlv3.SequenceNode:
		for _, c := range n.Content {
			addNotes(c, key)
		}
	}
}
