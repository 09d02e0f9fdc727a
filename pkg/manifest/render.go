package manifest

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// placeholderNotes are comments for the lines holding values a migration
// had to invent (by a text they contain), and for aliases, how to pin them.
var placeholderNotes = []struct{ contains, note string }{
	{placeholderRole, "# placeholder: the IAM role of your nodes"},
	{placeholderCluster, "# placeholder: the tag on your subnets / security groups"},
	{"ami-00000000000000000", "# placeholder: your AMI"},
	{"alias: al2@latest", "# " + aliasPinNote("al2@latest")},
	{"alias: al2023@latest", "# " + aliasPinNote("al2023@latest")},
	{"alias: bottlerocket@latest", "# " + aliasPinNote("bottlerocket@latest")},
}

// renderYAML prints objects as the YAML documents a user would commit:
// metadata only as a person writes it, no status, placeholders commented.
func renderYAML(objs []map[string]any) string {
	var docs []string
	for _, o := range objs {
		clean := map[string]any{}
		for k, v := range o {
			if k != "status" {
				clean[k] = v
			}
		}
		if md, ok := o["metadata"].(map[string]any); ok {
			m := map[string]any{}
			for _, k := range []string{"name", "namespace", "labels", "annotations"} {
				if v, ok := md[k]; ok {
					m[k] = v
				}
			}
			if ann, ok := m["annotations"].(map[string]any); ok {
				delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
				if len(ann) == 0 {
					delete(m, "annotations")
				}
			}
			clean["metadata"] = m
		}
		b, err := yaml.Marshal(clean)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		for i, l := range lines {
			for _, n := range placeholderNotes {
				if strings.Contains(l, n.contains) {
					lines[i] = l + "   " + n.note
					break
				}
			}
		}
		docs = append(docs, strings.Join(lines, "\n"))
	}
	return strings.Join(docs, "\n---\n")
}

// indentYAML prints v as YAML, each line indented.
func indentYAML(v any, indent string) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = indent + lines[i]
	}
	return strings.Join(lines, "\n")
}

// PlaceholderNote is the comment renderYAML puts on a line of a migrated
// document ("key: value") whose value a migration had to invent or that
// should be pinned, or "".
func PlaceholderNote(line string) string {
	for _, n := range placeholderNotes {
		if strings.Contains(line, n.contains) {
			return n.note
		}
	}
	return ""
}
