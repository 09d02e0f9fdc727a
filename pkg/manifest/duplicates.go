package manifest

import "fmt"

// clusterScoped are kinds without a namespace, so that one named twice in
// two namespaces is still one object.
var clusterScoped = map[string]bool{
	"NodePool": true, "NodeClaim": true, "EC2NodeClass": true, "NodeOverlay": true,
	"Provisioner": true, "AWSNodeTemplate": true, "Machine": true,
	"PriorityClass": true, "Namespace": true, "Node": true, "PersistentVolume": true, "StorageClass": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true, "IngressClass": true,
	"RuntimeClass": true, "CSIDriver": true, "VolumeAttachment": true, "APIService": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
}

// Duplicates reports every object defined a second time (same API group,
// kind, namespace and name) among docs, naming both places: the API server
// would keep only the one applied last, and a simulation would count both.
// Call it after Validate, so old-API input is compared as what it becomes.
func Duplicates(docs []*Document) Problems {
	type key struct{ group, kind, namespace, name string }
	first := map[key]*Document{}
	var ps Problems
	for _, d := range docs {
		if d.Kind == "" || d.Name == "" {
			continue
		}
		group, _ := splitAPIVersion(d.APIVersion)
		k := key{group, d.Kind, d.Namespace, d.Name}
		if clusterScoped[d.Kind] {
			k.namespace = ""
		} else if k.namespace == "" {
			k.namespace = "default"
		}
		f, seen := first[k]
		if !seen {
			first[k] = d
			continue
		}
		what := fmt.Sprintf("%s %q", d.Kind, d.Name)
		if k.namespace != "" {
			what = fmt.Sprintf("%s %s/%s", d.Kind, k.namespace, d.Name)
		}
		ps = append(ps, d.problem("metadata.name",
			fmt.Sprintf("%s is defined twice: here and at %s:%d (document %d); applied, the second replaces the first",
				what, f.File, f.LineOf("metadata.name"), f.Doc),
			"rename one of them, or delete the one you do not mean"))
	}
	return ps
}
