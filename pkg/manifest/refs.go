package manifest

import (
	"fmt"
	"sort"
	"strings"
)

// DanglingNodeClassRefs reports NodePools among docs whose EC2NodeClass is
// not among docs, when docs hold EC2NodeClasses at all: Karpenter marks such
// a pool not ready and it launches nothing. A set with no EC2NodeClass (a
// directory of NodePools only, a dump) is not judged. Call it after Validate,
// on the documents that passed. in names the set: "the scenario".
func DanglingNodeClassRefs(docs []*Document, in string) Problems {
	var have []string
	known := map[string]bool{}
	for _, d := range docs {
		if d.APIVersion == currentAPI["EC2NodeClass"] && d.Kind == "EC2NodeClass" && !known[d.Name] {
			known[d.Name] = true
			have = append(have, d.Name)
		}
	}
	if len(have) == 0 {
		return nil
	}
	sort.Strings(have)
	var ps Problems
	for _, d := range docs {
		if d.APIVersion != currentAPI["NodePool"] || d.Kind != "NodePool" {
			continue
		}
		spec, _ := d.Object["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		tspec, _ := tmpl["spec"].(map[string]any)
		ref, _ := tspec["nodeClassRef"].(map[string]any)
		name, _ := ref["name"].(string)
		if ref == nil || ref["kind"] != "EC2NodeClass" || known[name] {
			continue
		}
		ps = append(ps, d.problem("spec.template.spec.nodeClassRef.name",
			fmt.Sprintf("EC2NodeClass %q is not in %s: a NodePool whose node class does not exist launches nothing", name, in),
			"add the EC2NodeClass manifest to "+in+", or name one it has: "+strings.Join(have, ", ")))
	}
	return ps
}
