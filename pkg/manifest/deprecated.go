package manifest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// change is one piece of old-API input and its v1 replacement.
type change struct {
	field, message, fix string
}

// Deprecations lists input from older Karpenter API versions in d, each with
// the exact v1 replacement. It does not change d.
func Deprecations(d *Document) Problems {
	_, changes := migrate(d.Object)
	ps := make(Problems, 0, len(changes))
	for _, c := range changes {
		p := d.problem(c.field, c.message, c.fix)
		p.Deprecated = true
		ps = append(ps, p)
	}
	return ps
}

// Migrate returns d's object rewritten to karpenter.sh/v1 /
// karpenter.k8s.aws/v1, and whether anything changed. d is not modified.
func Migrate(d *Document) (map[string]any, bool) {
	out, changes := migrate(d.Object)
	return out, len(changes) > 0
}

func migrate(in map[string]any) (map[string]any, []change) {
	obj := runtime.DeepCopyJSON(in)
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	var cs []change
	switch {
	case apiVersion == "karpenter.sh/v1alpha5" && kind == "Provisioner":
		cs = migrateProvisioner(obj)
	case apiVersion == "karpenter.k8s.aws/v1alpha1" && kind == "AWSNodeTemplate":
		cs = migrateAWSNodeTemplate(obj)
	case strings.HasPrefix(apiVersion, "karpenter.sh/") && kind == "NodePool":
		if apiVersion != "karpenter.sh/v1" {
			cs = append(cs, change{"apiVersion", apiVersion + " is no longer served: NodePool is karpenter.sh/v1", "apiVersion: karpenter.sh/v1"})
			obj["apiVersion"] = "karpenter.sh/v1"
		}
		cs = append(cs, migrateNodePoolFields(obj)...)
	case strings.HasPrefix(apiVersion, "karpenter.sh/") && kind == "NodeClaim":
		if apiVersion != "karpenter.sh/v1" {
			cs = append(cs, change{"apiVersion", apiVersion + " is no longer served: NodeClaim is karpenter.sh/v1", "apiVersion: karpenter.sh/v1"})
			obj["apiVersion"] = "karpenter.sh/v1"
		}
		if spec, ok := obj["spec"].(map[string]any); ok {
			cs = append(cs, migrateNodeClassRef(spec, "spec")...)
		}
	case strings.HasPrefix(apiVersion, "karpenter.k8s.aws/") && kind == "EC2NodeClass" && apiVersion != "karpenter.k8s.aws/v1":
		cs = append(cs, change{"apiVersion", apiVersion + " is no longer served: EC2NodeClass is karpenter.k8s.aws/v1", "apiVersion: karpenter.k8s.aws/v1"})
		obj["apiVersion"] = "karpenter.k8s.aws/v1"
		cs = append(cs, migrateAMITerms(obj)...)
	}
	return obj, cs
}

func migrateNodePoolFields(obj map[string]any) []change {
	var cs []change
	spec := ensureMap(obj, "spec")
	tmplSpec := ensureMap(ensureMap(spec, "template"), "spec")
	disruption, _ := spec["disruption"].(map[string]any)

	if disruption != nil {
		if disruption["consolidationPolicy"] == "WhenUnderutilized" {
			cs = append(cs, change{"spec.disruption.consolidationPolicy",
				"WhenUnderutilized was renamed in karpenter.sh/v1",
				"consolidationPolicy: WhenEmptyOrUnderutilized"})
			disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
		}
		if v, ok := disruption["ttlSecondsAfterEmpty"]; ok {
			d := secondsToDuration(v)
			cs = append(cs, change{"spec.disruption.ttlSecondsAfterEmpty",
				"ttlSecondsAfterEmpty was removed in karpenter.sh/v1: empty-node consolidation is a policy plus a delay",
				"consolidationPolicy: WhenEmpty\nconsolidateAfter: " + d})
			delete(disruption, "ttlSecondsAfterEmpty")
			disruption["consolidationPolicy"] = "WhenEmpty"
			disruption["consolidateAfter"] = d
		}
		if v, ok := disruption["ttlSecondsUntilExpired"]; ok {
			d := secondsToDuration(v)
			cs = append(cs, change{"spec.disruption.ttlSecondsUntilExpired",
				"ttlSecondsUntilExpired was removed in karpenter.sh/v1: expiry belongs to the node template",
				"spec.template.spec.expireAfter: " + d})
			delete(disruption, "ttlSecondsUntilExpired")
			tmplSpec["expireAfter"] = d
		}
		if v, ok := disruption["expireAfter"]; ok {
			cs = append(cs, change{"spec.disruption.expireAfter",
				"expireAfter moved from spec.disruption to spec.template.spec in karpenter.sh/v1",
				fmt.Sprintf("spec.template.spec.expireAfter: %v", v)})
			delete(disruption, "expireAfter")
			tmplSpec["expireAfter"] = v
		}
	}
	if v, ok := spec["ttlSecondsUntilExpired"]; ok {
		d := secondsToDuration(v)
		cs = append(cs, change{"spec.ttlSecondsUntilExpired",
			"ttlSecondsUntilExpired was removed in karpenter.sh/v1",
			"spec.template.spec.expireAfter: " + d})
		delete(spec, "ttlSecondsUntilExpired")
		tmplSpec["expireAfter"] = d
	}
	if _, ok := tmplSpec["kubelet"]; ok {
		cs = append(cs, change{"spec.template.spec.kubelet",
			"kubelet moved from the NodePool to the EC2NodeClass in karpenter.sh/v1",
			"move the block to spec.kubelet of the EC2NodeClass this pool references"})
		delete(tmplSpec, "kubelet")
	}
	cs = append(cs, migrateNodeClassRef(tmplSpec, "spec.template.spec")...)
	return cs
}

// migrateNodeClassRef turns a v1beta1 {apiVersion, kind, name} reference into
// v1's {group, kind, name}, and supplies a missing one.
func migrateNodeClassRef(spec map[string]any, at string) []change {
	ref, ok := spec["nodeClassRef"].(map[string]any)
	if !ok {
		spec["nodeClassRef"] = map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
		return []change{{at + ".nodeClassRef",
			"nodeClassRef is required in karpenter.sh/v1: every NodePool names the node class its nodes are built from",
			"add under " + at + ":\n  nodeClassRef:\n    group: karpenter.k8s.aws\n    kind: EC2NodeClass\n    name: default   # the name of your EC2NodeClass"}}
	}
	av, ok := ref["apiVersion"].(string)
	if !ok {
		return nil
	}
	group := av
	if i := strings.Index(av, "/"); i >= 0 {
		group = av[:i]
	}
	delete(ref, "apiVersion")
	ref["group"] = group
	if _, ok := ref["kind"]; !ok {
		ref["kind"] = "EC2NodeClass"
	}
	return []change{{at + ".nodeClassRef.apiVersion",
		"nodeClassRef names a group, not an apiVersion, in karpenter.sh/v1",
		fmt.Sprintf("nodeClassRef: {group: %s, kind: %v, name: %v}", group, ref["kind"], ref["name"])}}
}

func migrateProvisioner(obj map[string]any) []change {
	old, _ := obj["spec"].(map[string]any)
	if old == nil {
		old = map[string]any{}
	}
	name := "default"
	if ref, ok := old["providerRef"].(map[string]any); ok {
		if n, ok := ref["name"].(string); ok {
			name = n
		}
	}
	tmplSpec := map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name}}
	tmplMeta := map[string]any{}
	for _, k := range []string{"requirements", "taints", "startupTaints"} {
		if v, ok := old[k]; ok {
			tmplSpec[k] = v
		}
	}
	if _, ok := tmplSpec["requirements"]; !ok {
		tmplSpec["requirements"] = []any{}
	}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := old[k]; ok {
			tmplMeta[k] = v
		}
	}
	disruption := map[string]any{}
	spec := map[string]any{"disruption": disruption}
	fix := []string{"apiVersion: karpenter.sh/v1", "kind: NodePool"}
	if v, ok := old["weight"]; ok {
		spec["weight"] = v
	}
	if lim, ok := old["limits"].(map[string]any); ok {
		if res, ok := lim["resources"]; ok {
			spec["limits"] = res
			fix = append(fix, "spec.limits.resources.* → spec.limits.*")
		}
	}
	switch {
	case old["ttlSecondsAfterEmpty"] != nil:
		d := secondsToDuration(old["ttlSecondsAfterEmpty"])
		disruption["consolidationPolicy"] = "WhenEmpty"
		disruption["consolidateAfter"] = d
		fix = append(fix, "ttlSecondsAfterEmpty → spec.disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: "+d+"}")
	case isTrue(old["consolidation"]):
		disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
		disruption["consolidateAfter"] = "0s"
		fix = append(fix, "consolidation.enabled: true → spec.disruption.consolidationPolicy: WhenEmptyOrUnderutilized")
	default:
		disruption["consolidationPolicy"] = "WhenEmpty"
		disruption["consolidateAfter"] = "Never"
		fix = append(fix, "no consolidation → spec.disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}")
	}
	if v, ok := old["ttlSecondsUntilExpired"]; ok {
		tmplSpec["expireAfter"] = secondsToDuration(v)
		fix = append(fix, "ttlSecondsUntilExpired → spec.template.spec.expireAfter: "+secondsToDuration(v))
	} else {
		tmplSpec["expireAfter"] = "Never"
	}
	fix = append(fix, "providerRef → spec.template.spec.nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: "+name+"}",
		"requirements, taints, startupTaints → spec.template.spec.*; labels, annotations → spec.template.metadata.*")
	if _, ok := old["kubeletConfiguration"]; ok {
		fix = append(fix, "kubeletConfiguration → spec.kubelet of the EC2NodeClass")
	}
	tmpl := map[string]any{"spec": tmplSpec}
	if len(tmplMeta) > 0 {
		tmpl["metadata"] = tmplMeta
	}
	spec["template"] = tmpl
	obj["apiVersion"] = "karpenter.sh/v1"
	obj["kind"] = "NodePool"
	obj["spec"] = spec
	return []change{{"kind", "Provisioner (karpenter.sh/v1alpha5) was replaced by NodePool (karpenter.sh/v1)", strings.Join(fix, "\n")}}
}

func migrateAWSNodeTemplate(obj map[string]any) []change {
	old, _ := obj["spec"].(map[string]any)
	if old == nil {
		old = map[string]any{}
	}
	spec := map[string]any{}
	fix := []string{"apiVersion: karpenter.k8s.aws/v1", "kind: EC2NodeClass"}
	for _, kv := range [][2]string{{"subnetSelector", "subnetSelectorTerms"}, {"securityGroupSelector", "securityGroupSelectorTerms"}, {"amiSelector", "amiSelectorTerms"}} {
		oldKey, newKey := kv[0], kv[1]
		if sel, ok := old[oldKey].(map[string]any); ok {
			spec[newKey] = selectorToTerms(sel)
			fix = append(fix, oldKey+": {k: v} → "+newKey+": [{tags: {k: v}}] (aws-ids → one {id: …} term each)")
		}
	}
	for _, k := range []string{"amiFamily", "tags", "blockDeviceMappings", "metadataOptions", "userData", "detailedMonitoring"} {
		if v, ok := old[k]; ok {
			spec[k] = v
		}
	}
	if v, ok := old["instanceProfile"]; ok {
		spec["instanceProfile"] = v
	} else {
		spec["role"] = "KarpenterNodeRole"
		fix = append(fix, "role: <the IAM role of your nodes> (required in v1 unless instanceProfile is set)")
	}
	obj["apiVersion"] = "karpenter.k8s.aws/v1"
	obj["kind"] = "EC2NodeClass"
	obj["spec"] = spec
	migrateAMITerms(obj)
	return []change{{"kind", "AWSNodeTemplate (karpenter.k8s.aws/v1alpha1) was replaced by EC2NodeClass (karpenter.k8s.aws/v1)", strings.Join(fix, "\n")}}
}

// migrateAMITerms gives a v1 EC2NodeClass without amiSelectorTerms the alias
// its amiFamily implied before v1.
func migrateAMITerms(obj map[string]any) []change {
	spec := ensureMap(obj, "spec")
	if _, ok := spec["amiSelectorTerms"]; ok {
		return nil
	}
	family, _ := spec["amiFamily"].(string)
	alias := map[string]string{"AL2": "al2@latest", "AL2023": "al2023@latest", "Bottlerocket": "bottlerocket@latest",
		"Windows2019": "windows2019@latest", "Windows2022": "windows2022@latest"}[family]
	if alias == "" {
		alias = "al2023@latest"
	}
	spec["amiSelectorTerms"] = []any{map[string]any{"alias": alias}}
	return []change{{"spec.amiSelectorTerms", "amiSelectorTerms is required in karpenter.k8s.aws/v1",
		"amiSelectorTerms:\n  - alias: " + alias + "   # pin a version (e.g. al2023@v20240807) in production"}}
}

func selectorToTerms(sel map[string]any) []any {
	if ids, ok := sel["aws-ids"].(string); ok {
		var terms []any
		for _, id := range strings.Split(ids, ",") {
			terms = append(terms, map[string]any{"id": strings.TrimSpace(id)})
		}
		return terms
	}
	tags := map[string]any{}
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		tags[k] = sel[k]
	}
	return []any{map[string]any{"tags": tags}}
}

func ensureMap(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

func isTrue(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["enabled"] == true
}

// secondsToDuration renders a seconds count as a v1 duration: 900 → 15m,
// 2592000 → 720h.
func secondsToDuration(v any) string {
	var secs int64
	switch n := v.(type) {
	case int64:
		secs = n
	case float64:
		secs = int64(n)
	case string:
		return n
	}
	s := (time.Duration(secs) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
