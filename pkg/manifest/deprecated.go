package manifest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"

	"k8s.io/apimachinery/pkg/runtime"
)

// change is one piece of old-API input and its v1 replacement.
// moveExpiry moves a ttlSecondsUntilExpired of from (at field) to the
// template's expireAfter, and says so (why, if set, ends the message).
func moveExpiry(from, tmplSpec map[string]any, field, why string) []change {
	v, ok := from["ttlSecondsUntilExpired"]
	if !ok {
		return nil
	}
	d := secondsToDuration(v)
	delete(from, "ttlSecondsUntilExpired")
	tmplSpec["expireAfter"] = d
	return []change{{field, "ttlSecondsUntilExpired was removed in karpenter.sh/v1" + why,
		"delete it here and add spec.template.spec.expireAfter: " + d, nil}}
}

// leftOut notes the fields of an old spec that no migration handled.
func leftOut(old map[string]any, handled map[string]bool) []string {
	var dropped []string
	for k := range old {
		if !handled[k] {
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	sort.Strings(dropped)
	return []string{"no v1 equivalent, left out: spec." + strings.Join(dropped, ", spec.")}
}

type change struct {
	field, message, fix string
	// replacement is the whole v1 document(s) to use instead, for input
	// whose kind was replaced.
	replacement []map[string]any
}

// Deprecations lists input from older Karpenter API versions in d, each with
// the exact v1 replacement. It does not change d.
func Deprecations(d *Document) Problems {
	_, changes := migrate(d.Object)
	ps := make(Problems, 0, len(changes))
	for _, c := range changes {
		p := d.problem(c.field, c.message, c.fix)
		p.Deprecated = true
		if len(c.replacement) > 0 {
			p.Replacement = renderYAML(c.replacement)
		}
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
	group, version := splitAPIVersion(apiVersion)
	if group != "" && !isKarpenterGroup(group) && group != bufferGroup {
		return obj, nil // another project's kind of the same name
	}
	ck := canonicalKind(kind)
	if group == "" && ck == "Machine" {
		return obj, nil // cluster.x-k8s.io has a Machine too; only Karpenter's is answered
	}
	var cs []change
	switch ck {
	case "Provisioner":
		cs = migrateProvisioner(obj, apiVersion, kind)
	case "AWSNodeTemplate":
		cs = migrateAWSNodeTemplate(obj, apiVersion, kind)
	case "Machine":
		cs = []change{{"kind", fmt.Sprintf("Machine (%s) was replaced by NodeClaim (karpenter.sh/v1), and Karpenter creates NodeClaims itself", apiVersion),
			"delete this document: Machines and NodeClaims are made by the controller for each node, not written by hand; write a NodePool instead", nil}}
	case "CapacityBuffer":
		cs = fixKindAndVersion(obj, ck, kind, apiVersion)
	case "NodePool", "NodeClaim", "EC2NodeClass":
		cs = fixKindAndVersion(obj, ck, kind, apiVersion)
		switch ck {
		case "NodePool":
			cs = append(cs, migrateNodePoolFields(obj)...)
		case "NodeClaim":
			if spec, ok := obj["spec"].(map[string]any); ok {
				cs = append(cs, migrateNodeClassRef(spec, "spec")...)
				if _, ok := spec["kubelet"]; ok {
					cs = append(cs, change{"spec.kubelet", "kubelet moved from the NodeClaim to the EC2NodeClass in karpenter.sh/v1",
						"delete spec.kubelet here and set it as spec.kubelet of the EC2NodeClass this claim references", nil})
					delete(spec, "kubelet")
				}
			}
		case "EC2NodeClass":
			if version != "v1" {
				cs = append(cs, migrateEC2NodeClassFields(obj, "karpenter.k8s.aws/v1beta1 EC2NodeClass")...)
			}
		}
	}
	return obj, cs
}

// fixKindAndVersion answers a current kind written with the wrong spelling,
// an old or unknown version, or another group's apiVersion.
func fixKindAndVersion(obj map[string]any, ck, kind, apiVersion string) []change {
	var cs []change
	if kind != ck {
		cs = append(cs, change{"kind", fmt.Sprintf("kind %q is spelled %s", kind, ck), "kind: " + ck, nil})
		obj["kind"] = ck
	}
	want := currentAPI[ck]
	if apiVersion == want {
		return cs
	}
	group, _ := splitAPIVersion(apiVersion)
	wantGroup, _ := splitAPIVersion(want)
	var msg string
	var replacement []map[string]any
	switch {
	case group == wantGroup:
		msg = versionNote(apiVersion) + ": " + ck + " is " + want
		// The whole document in v1 (obj as the field migrations below leave
		// it), so a user can take it as it is.
		replacement = []map[string]any{obj}
	case group == "":
		msg = fmt.Sprintf("%s: %s is not a core Kubernetes kind; it belongs to %s", versionNote(apiVersion), ck, want)
		if apiVersion == "" {
			msg = fmt.Sprintf("apiVersion is missing: %s is %s", ck, want)
		}
	default:
		msg = fmt.Sprintf("%s belongs to the API group %s, not %s: its apiVersion is %s", ck, wantGroup, group, want)
	}
	cs = append(cs, change{"apiVersion", msg, "apiVersion: " + want, replacement})
	obj["apiVersion"] = want
	return cs
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
				"consolidationPolicy: WhenEmptyOrUnderutilized", nil})
			disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
		}
		if v, ok := disruption["ttlSecondsAfterEmpty"]; ok {
			d := secondsToDuration(v)
			// Say only what the user must write: a policy already set stays.
			fix := fmt.Sprintf("replace ttlSecondsAfterEmpty: %v with\nconsolidateAfter: %s", v, d)
			switch policy, set := disruption["consolidationPolicy"]; {
			case !set:
				fix = fmt.Sprintf("replace ttlSecondsAfterEmpty: %v with\nconsolidationPolicy: WhenEmpty\nconsolidateAfter: %s", v, d)
			case policy != "WhenEmpty":
				fix += "\nand set consolidationPolicy: WhenEmpty (ttlSecondsAfterEmpty only ever removed empty nodes)"
			}
			if _, set := disruption["consolidateAfter"]; set {
				fix = fmt.Sprintf("delete ttlSecondsAfterEmpty: %v and set consolidateAfter: %s", v, d)
				if disruption["consolidationPolicy"] != "WhenEmpty" {
					fix += "\nand consolidationPolicy: WhenEmpty"
				}
			}
			cs = append(cs, change{"spec.disruption.ttlSecondsAfterEmpty",
				"ttlSecondsAfterEmpty was removed in karpenter.sh/v1: empty-node consolidation is a policy plus a delay", fix, nil})
			delete(disruption, "ttlSecondsAfterEmpty")
			disruption["consolidationPolicy"] = "WhenEmpty"
			disruption["consolidateAfter"] = d
		}
		cs = append(cs, moveExpiry(disruption, tmplSpec, "spec.disruption.ttlSecondsUntilExpired", ": expiry belongs to the node template")...)
		if v, ok := disruption["expireAfter"]; ok {
			cs = append(cs, change{"spec.disruption.expireAfter",
				"expireAfter moved from spec.disruption to spec.template.spec in karpenter.sh/v1",
				fmt.Sprintf("delete it here and add spec.template.spec.expireAfter: %v", v), nil})
			delete(disruption, "expireAfter")
			tmplSpec["expireAfter"] = v
		}
	}
	cs = append(cs, moveExpiry(spec, tmplSpec, "spec.ttlSecondsUntilExpired", "")...)
	if kubelet, ok := tmplSpec["kubelet"]; ok {
		ref, _ := tmplSpec["nodeClassRef"].(map[string]any)
		name, _ := ref["name"].(string)
		if name == "" {
			name = "default"
		}
		cs = append(cs, change{"spec.template.spec.kubelet",
			"kubelet moved from the NodePool to the EC2NodeClass in karpenter.sh/v1",
			"delete the block here and set it as spec.kubelet of EC2NodeClass " + name + ":\n" + indentYAML(map[string]any{"kubelet": kubelet}, ""), nil})
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
			"add under " + at + ":\n  nodeClassRef:\n    group: karpenter.k8s.aws\n    kind: EC2NodeClass\n    name: default   # the name of your EC2NodeClass", nil}}
	}
	av, ok := ref["apiVersion"].(string)
	if !ok {
		return nil
	}
	group, _ := splitAPIVersion(av)
	delete(ref, "apiVersion")
	ref["group"] = group
	if _, ok := ref["kind"]; !ok {
		ref["kind"] = "EC2NodeClass"
	}
	return []change{{at + ".nodeClassRef.apiVersion",
		"nodeClassRef names a group, not an apiVersion, in karpenter.sh/v1",
		fmt.Sprintf("nodeClassRef: {group: %s, kind: %v, name: %v}", group, ref["kind"], ref["name"]), nil}}
}

// v1alpha5Defaults are the requirements Karpenter's v1alpha5 webhooks added
// to a Provisioner that did not constrain the key; v1 adds none, so a
// faithful NodePool states them.
var v1alpha5Defaults = []struct {
	keys []string // any of these present: no default
	req  map[string]any
}{
	{[]string{"node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-category"},
		map[string]any{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": []any{"c", "m", "r"}}},
	{[]string{"node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation"},
		map[string]any{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": []any{"2"}}},
	{[]string{"karpenter.sh/capacity-type"}, map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}}},
	{[]string{"kubernetes.io/arch"}, map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64"}}},
	{[]string{"kubernetes.io/os"}, map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"}}},
}

// migrateProvisioner rewrites a Provisioner (karpenter.sh/v1alpha5, or the
// v1alpha1–v1alpha4 and provisioning.karpenter.sh shapes before it) as a
// NodePool, plus an EC2NodeClass when its AWS settings were inline
// (spec.provider). The answer carries the whole replacement.
func migrateProvisioner(obj map[string]any, apiVersion, kind string) []change {
	old, _ := obj["spec"].(map[string]any)
	if old == nil {
		old = map[string]any{}
	}
	name := "default"
	if md, ok := obj["metadata"].(map[string]any); ok {
		if n, ok := md["name"].(string); ok && n != "" {
			name = n
		}
	}
	m := &provisionerMigration{old: old, handled: map[string]bool{}, className: "default"}
	m.nodeClass(name)
	tmplSpec := map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": m.className},
		"requirements": m.requirements()}
	tmplMeta := map[string]any{}
	for _, k := range []string{"taints", "startupTaints"} {
		if v, ok := m.use(k); ok {
			tmplSpec[k] = v
		}
	}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := m.use(k); ok {
			tmplMeta[k] = v
		}
	}
	spec := map[string]any{}
	if v, ok := m.use("weight"); ok {
		spec["weight"] = v
	}
	if lim, ok := m.use("limits"); ok {
		if lm, ok := lim.(map[string]any); ok {
			if res, ok := lm["resources"]; ok {
				spec["limits"] = res
				m.note("spec.limits.resources → spec.limits")
			} else {
				spec["limits"] = lm
			}
		}
	}
	spec["disruption"] = m.disruption()
	tmplSpec["expireAfter"] = m.expireAfter()
	m.note("requirements, taints, startupTaints → spec.template.spec.*; labels, annotations → spec.template.metadata.*")
	m.kubelet()
	if _, ok := m.use("cluster"); ok {
		m.note("spec.cluster has no replacement: the controller's settings name the cluster")
	}
	m.notes = append(m.notes, leftOut(old, m.handled)...)
	tmpl := map[string]any{"spec": tmplSpec}
	if len(tmplMeta) > 0 {
		tmpl["metadata"] = tmplMeta
	}
	spec["template"] = tmpl
	obj["apiVersion"] = "karpenter.sh/v1"
	obj["kind"] = "NodePool"
	obj["spec"] = spec
	replacement := []map[string]any{obj}
	if m.class != nil {
		replacement = append(replacement, m.class)
	}
	what := fmt.Sprintf("%s (%s)", kind, apiVersion)
	if g, _ := splitAPIVersion(apiVersion); g == "karpenter.k8s.aws" {
		what += "; Provisioner was karpenter.sh/v1alpha5"
	}
	return []change{{field: "kind", message: what + " was replaced by NodePool (karpenter.sh/v1)",
		fix:         "replace the document with the NodePool below; what moved:\n- " + strings.Join(m.notes, "\n- "),
		replacement: replacement}}
}

// provisionerMigration is a Provisioner's spec being moved to a NodePool:
// the fields taken so far and what each move says.
type provisionerMigration struct {
	old       map[string]any
	handled   map[string]bool
	notes     []string
	className string
	// class is the EC2NodeClass an inline spec.provider becomes (nil
	// without one).
	class map[string]any
}

// use takes a field of the old spec.
func (m *provisionerMigration) use(k string) (any, bool) {
	v, ok := m.old[k]
	m.handled[k] = true
	return v, ok
}

func (m *provisionerMigration) note(s string) { m.notes = append(m.notes, s) }

// nodeClass takes providerRef, or makes an EC2NodeClass named after the
// Provisioner from an inline spec.provider.
func (m *provisionerMigration) nodeClass(name string) {
	if ref, ok := m.old["providerRef"].(map[string]any); ok {
		m.handled["providerRef"] = true
		if n, ok := ref["name"].(string); ok {
			m.className = n
		}
	}
	p, ok := m.use("provider")
	if !ok {
		return
	}
	pm, _ := p.(map[string]any)
	m.className = name
	m.class = map[string]any{"apiVersion": "karpenter.sh/v1alpha5", "kind": "AWSNodeTemplate",
		"metadata": map[string]any{"name": m.className}, "spec": runtime.DeepCopyJSONValue(pm)}
	sub := migrateAWSNodeTemplate(m.class, "karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate")
	_, subNotes, _ := strings.Cut(sub[0].fix, "\n")
	m.note("spec.provider → an EC2NodeClass named " + m.className + " (below); in it:\n  " + strings.ReplaceAll(subNotes, "\n", "\n  "))
}

// requirements are the old requirements, the per-key lists of the shapes
// before them (v0.4 and earlier), and the ones v1alpha5's webhook added.
func (m *provisionerMigration) requirements() []any {
	var reqs []any
	if v, ok := m.use("requirements"); ok {
		reqs, _ = v.([]any)
	}
	for _, kv := range [][2]string{{"instanceTypes", "node.kubernetes.io/instance-type"}, {"zones", "topology.kubernetes.io/zone"},
		{"architecture", "kubernetes.io/arch"}, {"architectures", "kubernetes.io/arch"}, {"operatingSystem", "kubernetes.io/os"}, {"operatingSystems", "kubernetes.io/os"}} {
		if v, ok := m.use(kv[0]); ok {
			var values []any
			switch t := v.(type) {
			case []any:
				values = t
			default:
				values = []any{fmt.Sprint(t)}
			}
			reqs = append(reqs, map[string]any{"key": kv[1], "operator": "In", "values": values})
			m.note(kv[0] + " → a requirement on " + kv[1])
		}
	}
	has := map[string]bool{}
	for _, r := range reqs {
		if rm, ok := r.(map[string]any); ok {
			k, _ := rm["key"].(string)
			has[k] = true
		}
	}
	var added []string
	for _, def := range v1alpha5Defaults {
		if !slices.ContainsFunc(def.keys, func(k string) bool { return has[k] }) {
			reqs = append(reqs, def.req)
			added = append(added, def.req["key"].(string))
		}
	}
	if len(added) > 0 {
		m.note("requirements Karpenter's v1alpha5 webhook used to add, now written out: " + strings.Join(added, ", "))
	}
	return reqs
}

// disruption is what ttlSecondsAfterEmpty and consolidation become.
func (m *provisionerMigration) disruption() map[string]any {
	ttlEmpty, _ := m.use("ttlSecondsAfterEmpty")
	consolidation, _ := m.use("consolidation")
	switch {
	case ttlEmpty != nil:
		d := secondsToDuration(ttlEmpty)
		m.note("ttlSecondsAfterEmpty → spec.disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: " + d + "}")
		return map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": d}
	case isTrue(consolidation):
		m.note("consolidation.enabled: true → spec.disruption.consolidationPolicy: WhenEmptyOrUnderutilized")
		return map[string]any{"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
	}
	m.note("no consolidation → spec.disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}")
	return map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}
}

// expireAfter is what ttlSecondsUntilExpired becomes.
func (m *provisionerMigration) expireAfter() string {
	if v, ok := m.use("ttlSecondsUntilExpired"); ok {
		m.note("ttlSecondsUntilExpired → spec.template.spec.expireAfter: " + secondsToDuration(v))
		return secondsToDuration(v)
	}
	m.note("no ttlSecondsUntilExpired (nodes never expired) → spec.template.spec.expireAfter: Never (v1's default is 720h)")
	return "Never"
}

// kubelet moves kubeletConfiguration to the EC2NodeClass.
func (m *provisionerMigration) kubelet() {
	for _, k := range []string{"kubeletConfiguration", "kubelet"} {
		v, ok := m.use(k)
		if !ok {
			continue
		}
		kubelet, _ := v.(map[string]any)
		kubelet = runtime.DeepCopyJSON(kubelet)
		if _, ok := kubelet["containerRuntime"]; ok {
			delete(kubelet, "containerRuntime")
			m.note("kubeletConfiguration.containerRuntime has no replacement: nodes run containerd")
		}
		if m.class != nil {
			ensureMap(m.class, "spec")["kubelet"] = kubelet
			m.note(k + " → spec.kubelet of the EC2NodeClass below")
		} else {
			m.note(k + " → set spec.kubelet of EC2NodeClass " + m.className + ":\n" + indentYAML(map[string]any{"kubelet": kubelet}, "  "))
		}
	}
}

// migrateAWSNodeTemplate rewrites an AWSNodeTemplate (karpenter.k8s.aws/v1alpha1)
// as an EC2NodeClass.
func migrateAWSNodeTemplate(obj map[string]any, apiVersion, kind string) []change {
	old, _ := obj["spec"].(map[string]any)
	if old == nil {
		old = map[string]any{}
	}
	spec := map[string]any{}
	var notes []string
	handled := map[string]bool{}
	for _, kv := range [][2]string{{"subnetSelector", "subnetSelectorTerms"}, {"securityGroupSelector", "securityGroupSelectorTerms"}, {"amiSelector", "amiSelectorTerms"}} {
		oldKey, newKey := kv[0], kv[1]
		handled[oldKey] = true
		if sel, ok := old[oldKey].(map[string]any); ok {
			spec[newKey] = selectorToTerms(sel)
			notes = append(notes, oldKey+": {key: value} → "+newKey+": [{tags: {key: value}}] (aws-ids → one {id: …} term each)")
		}
	}
	for _, k := range []string{"amiFamily", "tags", "blockDeviceMappings", "metadataOptions", "userData", "detailedMonitoring", "associatePublicIPAddress", "context"} {
		handled[k] = true
		if v, ok := old[k]; ok {
			spec[k] = v
		}
	}
	if _, ok := spec["amiFamily"]; !ok {
		// Before v1beta1 an AWSNodeTemplate without amiFamily ran AL2.
		spec["amiFamily"] = "AL2"
		notes = append(notes, "no amiFamily (AL2 before v1beta1) → amiFamily: AL2")
	}
	handled["instanceProfile"] = true
	if v, ok := old["instanceProfile"]; ok {
		spec["instanceProfile"] = v
	} else {
		spec["role"] = placeholderRole
		notes = append(notes, "role: the IAM role of your nodes (required in v1 unless instanceProfile is set; "+placeholderRole+" is a placeholder)")
	}
	for _, k := range []string{"launchTemplate", "launchTemplateName"} {
		handled[k] = true
		if _, ok := old[k]; ok {
			notes = append(notes, k+" has no replacement: set its blockDeviceMappings, metadataOptions, userData and security groups on the EC2NodeClass")
		}
	}
	if _, ok := old["subnetSelector"]; !ok {
		spec["subnetSelectorTerms"] = []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": placeholderCluster}}}
		notes = append(notes, "subnetSelectorTerms are required in v1: tag your subnets (karpenter.sh/discovery: "+placeholderCluster+" is a placeholder)")
	}
	if _, ok := old["securityGroupSelector"]; !ok {
		spec["securityGroupSelectorTerms"] = []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": placeholderCluster}}}
		notes = append(notes, "securityGroupSelectorTerms are required in v1: tag your security groups (karpenter.sh/discovery: "+placeholderCluster+" is a placeholder)")
	}
	notes = append(notes, leftOut(old, handled)...)
	obj["apiVersion"] = "karpenter.k8s.aws/v1"
	obj["kind"] = "EC2NodeClass"
	obj["spec"] = spec
	if migrateAMITerms(obj) != nil {
		var terms []string
		for _, t := range spec["amiSelectorTerms"].([]any) {
			for k, v := range t.(map[string]any) {
				terms = append(terms, fmt.Sprintf("{%s: %v}", k, v))
			}
		}
		note := fmt.Sprintf("amiFamily %v → amiSelectorTerms: [%s]", spec["amiFamily"], strings.Join(terms, ", "))
		if _, n := aliasFor(fmt.Sprint(spec["amiFamily"])); n != "" {
			note += " (" + n + ")"
		}
		notes = append(notes, note)
	}
	what := fmt.Sprintf("%s (%s)", kind, apiVersion)
	if apiVersion != "karpenter.k8s.aws/v1alpha1" {
		what += "; AWSNodeTemplate was karpenter.k8s.aws/v1alpha1"
	}
	return []change{{field: "kind", message: what + " was replaced by EC2NodeClass (karpenter.k8s.aws/v1)",
		fix:         "replace the document with the EC2NodeClass below; what changed:\n- " + strings.Join(notes, "\n- "),
		replacement: []map[string]any{obj}}}
}

// migrateEC2NodeClassFields: what a v1beta1 EC2NodeClass lacks in v1.
func migrateEC2NodeClassFields(obj map[string]any, from string) []change {
	spec := ensureMap(obj, "spec")
	var cs []change
	if spec["amiFamily"] == "Ubuntu" {
		cs = append(cs, change{"spec.amiFamily", "amiFamily Ubuntu was removed in karpenter.k8s.aws/v1: there is no Ubuntu alias",
			"amiFamily: AL2\namiSelectorTerms:\n  - id: ami-…   # your Ubuntu AMI (AL2 bootstrapping applies; check your userData)", nil})
		spec["amiFamily"] = "AL2"
		if _, ok := spec["amiSelectorTerms"]; !ok {
			spec["amiSelectorTerms"] = []any{map[string]any{"id": "ami-00000000000000000"}}
		}
	}
	return append(cs, migrateAMITerms(obj)...)
}

const (
	// As upstream's getting-started guide writes them, so they read as
	// placeholders and never collide with a user's own values.
	placeholderRole    = "KarpenterNodeRole-${CLUSTER_NAME}"
	placeholderCluster = "${CLUSTER_NAME}"
)

// aliasFor is the amiSelectorTerms alias that selects what amiFamily used to
// (the family's newest image), and a note for families with caveats.
func aliasFor(family string) (alias, note string) {
	switch family {
	case "AL2":
		return "al2@latest", "AL2 images stop with Kubernetes 1.32; plan a move to al2023"
	case "AL2023":
		return "al2023@latest", ""
	case "Bottlerocket":
		return "bottlerocket@latest", ""
	case "Windows2019":
		return "windows2019@latest", ""
	case "Windows2022":
		return "windows2022@latest", ""
	case "Windows2025":
		return "windows2025@latest", ""
	}
	return "", ""
}

// migrateAMITerms gives an EC2NodeClass without amiSelectorTerms the alias
// its amiFamily implied before v1 (a Custom family needs the user's AMIs).
func migrateAMITerms(obj map[string]any) []change {
	spec := ensureMap(obj, "spec")
	if _, ok := spec["amiSelectorTerms"]; ok {
		return nil
	}
	family, _ := spec["amiFamily"].(string)
	alias, note := aliasFor(family)
	if alias == "" {
		spec["amiSelectorTerms"] = []any{map[string]any{"id": "ami-00000000000000000"}}
		return []change{{"spec.amiSelectorTerms", "amiSelectorTerms is required in karpenter.k8s.aws/v1",
			"amiSelectorTerms:\n  - id: ami-…   # your AMI (amiFamily " + family + " selects no image by itself)", nil}}
	}
	spec["amiSelectorTerms"] = []any{map[string]any{"alias": alias}}
	fix := "amiSelectorTerms:\n  - alias: " + alias + "   # " + aliasPinNote(alias)
	if note != "" {
		fix += "\n(" + note + ")"
	}
	return []change{{"spec.amiSelectorTerms", "amiSelectorTerms is required in karpenter.k8s.aws/v1: amiFamily " + family + " no longer selects an image by itself", fix, nil}}
}

// aliasPinNote says how to pin an alias's version, as that family writes it.
func aliasPinNote(alias string) string {
	family, _, _ := strings.Cut(alias, "@")
	switch {
	case strings.HasPrefix(family, "windows"):
		return "Windows aliases only take @latest"
	case family == "bottlerocket":
		return "pin a version (e.g. bottlerocket@v1.20.3) in production"
	}
	return "pin a version (e.g. " + family + "@v20240807) in production"
}

func selectorToTerms(sel map[string]any) []any {
	var terms []any
	tags := map[string]any{}
	var name string
	var owners []string
	for k, v := range sel {
		str := fmt.Sprint(v)
		switch k {
		case "aws-ids", "aws::ids":
			for _, id := range strings.Split(str, ",") {
				terms = append(terms, map[string]any{"id": strings.TrimSpace(id)})
			}
		case "aws::name":
			name = str
		case "aws::owners":
			for _, o := range strings.Split(str, ",") {
				owners = append(owners, strings.TrimSpace(o))
			}
		default:
			tags[k] = v
		}
	}
	sort.Slice(terms, func(i, j int) bool {
		return fmt.Sprint(terms[i].(map[string]any)["id"]) < fmt.Sprint(terms[j].(map[string]any)["id"])
	})
	switch {
	case name != "" && len(owners) > 0:
		sort.Strings(owners)
		for _, o := range owners {
			terms = append(terms, map[string]any{"name": name, "owner": o})
		}
	case name != "":
		terms = append(terms, map[string]any{"name": name})
	case len(owners) > 0:
		sort.Strings(owners)
		for _, o := range owners {
			t := map[string]any{"owner": o}
			if len(tags) > 0 {
				t["tags"] = tags
			}
			terms = append(terms, t)
		}
		return terms
	}
	if len(tags) > 0 {
		terms = append(terms, map[string]any{"tags": tags})
	}
	return terms
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
	return v1.ShortDuration(time.Duration(secs) * time.Second)
}
