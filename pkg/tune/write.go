package tune

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// EditedFile is a scenario file with a variant's edits made.
type EditedFile struct {
	// Path is the file's path below the scenario directory.
	Path     string
	Old, New []byte
}

// EditFiles makes the variant's edits in the scenario's YAML files, through
// the YAML node tree so that comments, key order and styles stay: only the
// documents it edits are re-encoded, and in them only the tuned fields
// change. Files it does not edit are left out.
func (p *Plan) EditFiles(v Variant) ([]EditedFile, error) {
	edits := p.Edits(v)
	byDoc := map[string][]Edit{}
	for _, e := range edits {
		byDoc[docKey(e.Kind, e.Name)] = append(byDoc[docKey(e.Kind, e.Name)], e)
	}
	files, err := manifest.YAMLFiles(p.FS, p.Dir)
	if err != nil {
		return nil, err
	}
	var out []EditedFile
	found := map[string]bool{}
	for _, f := range files {
		old, err := fs.ReadFile(p.FS, f)
		if err != nil {
			return nil, err
		}
		chunks := manifest.Chunks(old)
		changed := false
		for i, chunk := range chunks {
			docs, err := manifest.Parse(f, chunk)
			if err != nil || len(docs) != 1 {
				continue
			}
			d := docs[0]
			key := docKey(d.Kind, d.Name)
			if d.Kind == "HorizontalPodAutoscaler" {
				key = docKey(d.Kind, hpaKey(d.Namespace, d.Name))
			}
			es := byDoc[key]
			if len(es) == 0 {
				continue
			}
			body, err := editChunk(chunk, d.Kind, es)
			if errors.Is(err, errNotTheDocument) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", f, d.Kind, d.Name, err)
			}
			found[key] = true
			if !bytes.Equal(body, chunk) {
				chunks[i], changed = body, true
			}
		}
		if changed {
			rel := strings.TrimPrefix(strings.TrimPrefix(f, p.Dir), "/")
			if p.Dir == "." {
				rel = f
			}
			out = append(out, EditedFile{Path: rel, Old: old, New: bytes.Join(chunks, nil)})
		}
	}
	var missing []string
	for k := range byDoc {
		if !found[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%s: not a document of its own in the scenario's files (an item of a List?), so it cannot be edited in place: write it as a YAML document of its own", strings.Join(missing, ", "))
	}
	return out, nil
}

// WriteFiles writes the edited files below dir, with a unified diff of
// each against the input.
func WriteFiles(dir string, files []EditedFile) (diff string, err error) {
	var b strings.Builder
	for _, f := range files {
		to := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(to, f.New, 0o644); err != nil {
			return "", err
		}
		b.WriteString(UnifiedDiff("a/"+f.Path, "b/"+f.Path, string(f.Old), string(f.New)))
	}
	return b.String(), nil
}

// splitDocuments cuts a file before each "---" line; joined, the chunks
// are the file again.

// errNotTheDocument: the chunk's top object is not the one to edit (a List
// holding it).
var errNotTheDocument = errors.New("not the document")

func editChunk(chunk []byte, kind string, edits []Edit) ([]byte, error) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(chunk, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yamlv3.MappingNode {
		return nil, fmt.Errorf("not a YAML mapping")
	}
	if k := nodeAt(root.Content[0], "kind"); k == nil || k.Value != kind {
		return nil, errNotTheDocument
	}
	for _, e := range edits {
		if err := setNode(root.Content[0], e.Path, e.Value); err != nil {
			return nil, err
		}
	}
	return manifest.EncodeChunk(chunk, &root)
}

// setNode is setPath over a YAML mapping node.
func setNode(n *yamlv3.Node, path []string, value any) error {
	for i, seg := range path {
		last := i == len(path)-1
		if field, want, ok := strings.Cut(seg, "="); ok {
			if n.Kind != yamlv3.SequenceNode {
				return fmt.Errorf("%s is not a list", strings.Join(path[:i], "."))
			}
			var item *yamlv3.Node
			for _, c := range n.Content {
				if s := nodeAt(c, field); s != nil && s.Kind == yamlv3.ScalarNode && s.Value == want {
					item = c
					break
				}
			}
			if item == nil {
				item = &yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map"}
				if err := setNode(item, strings.Split(field, "."), want); err != nil {
					return err
				}
				n.Content = append(n.Content, item)
			}
			n = item
			continue
		}
		if n.Kind != yamlv3.MappingNode {
			return fmt.Errorf("%s is not an object", strings.Join(path[:i], "."))
		}
		var child *yamlv3.Node
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == seg {
				child = n.Content[k+1]
				break
			}
		}
		if child == nil {
			child = &yamlv3.Node{}
			if !last {
				child = &yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map"}
				if strings.Contains(path[i+1], "=") {
					child = &yamlv3.Node{Kind: yamlv3.SequenceNode, Tag: "!!seq"}
				}
			}
			n.Content = append(n.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: seg}, child)
		}
		if last {
			return replaceNode(child, value)
		}
		n = child
	}
	return nil
}

func nodeAt(n *yamlv3.Node, dotted string) *yamlv3.Node {
	for _, s := range strings.Split(dotted, ".") {
		if n.Kind != yamlv3.MappingNode {
			return nil
		}
		var next *yamlv3.Node
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == s {
				next = n.Content[k+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// replaceNode makes n hold v, keeping its comments, a collection's flow
// style and the quoting of a list's scalars.
func replaceNode(n *yamlv3.Node, v any) error {
	var fresh yamlv3.Node
	if err := fresh.Encode(v); err != nil {
		return err
	}
	head, line, foot := n.HeadComment, n.LineComment, n.FootComment
	flow := n.Style & yamlv3.FlowStyle
	var itemStyle yamlv3.Style
	if n.Kind == yamlv3.SequenceNode && len(n.Content) > 0 && n.Content[0].Kind == yamlv3.ScalarNode {
		itemStyle = n.Content[0].Style
	}
	wasEmpty := n.Kind == 0
	*n = fresh
	n.HeadComment, n.LineComment, n.FootComment = head, line, foot
	if n.Kind != yamlv3.ScalarNode {
		n.Style |= flow
	}
	if n.Kind == yamlv3.SequenceNode && !wasEmpty {
		for _, c := range n.Content {
			if c.Kind == yamlv3.ScalarNode && c.Tag == "!!str" {
				c.Style = itemStyle
			}
		}
	}
	return nil
}
