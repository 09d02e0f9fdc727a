// Package crds embeds the CustomResourceDefinitions generated from pkg/apis by
// hack/codegen.sh, so the binary validates manifests with the schema and CEL
// rules it would install into a cluster.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// FS is the directory of generated CRD YAML files, as controller-gen wrote
// them (without the additions of All).
func FS() fs.FS { return files }

// All decodes every embedded CRD, sorted by name, with upstream's schema
// additions applied (see Patch).
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", n, err)
		}
		if err := Patch(crd); err != nil {
			return nil, fmt.Errorf("patching embedded CRD %s: %w", n, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Upstream's patterns, which its build adds to the generated CRDs with yq
// (hack/validation/taint.sh and labels.sh in kubernetes-sigs/karpenter).
const (
	// qualifiedNamePattern is a taint key or value: an optional lower-case
	// DNS subdomain and '/', then a name.
	qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// labelValuePattern is a label value (empty allowed).
	labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
)

// Patch adds to a generated CRD the schema constraints upstream adds after
// generation and controller-gen cannot express from Go markers: patterns and
// the effect enum on the fields of corev1.Taint (a type of another module),
// and a length and pattern on the values of the template's label map. Written
// as CEL rules these would exceed the API server's cost budget, as the strings
// have no maximum length. CRDs of other kinds are left alone.
func Patch(crd *apiextensionsv1.CustomResourceDefinition) error {
	var taintLists [][]string
	var labels []string
	switch crd.Spec.Names.Kind {
	case "NodePool":
		taintLists = [][]string{
			{"spec", "template", "spec", "taints"},
			{"spec", "template", "spec", "startupTaints"},
		}
		labels = []string{"spec", "template", "metadata", "labels"}
	case "NodeClaim":
		taintLists = [][]string{{"spec", "taints"}, {"spec", "startupTaints"}}
	default:
		return nil
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		root := v.Schema.OpenAPIV3Schema
		for _, path := range taintLists {
			err := update(root, path, func(list *apiextensionsv1.JSONSchemaProps) error {
				if list.Items == nil || list.Items.Schema == nil {
					return fmt.Errorf("%v has no item schema", path)
				}
				props := list.Items.Schema.Properties
				key, value, effect := props["key"], props["value"], props["effect"]
				key.MinLength = ptr(int64(1))
				key.Pattern = qualifiedNamePattern
				value.Pattern = qualifiedNamePattern
				effect.Enum = jsonStrings("NoSchedule", "PreferNoSchedule", "NoExecute")
				props["key"], props["value"], props["effect"] = key, value, effect
				return nil
			})
			if err != nil {
				return err
			}
		}
		if labels == nil {
			continue
		}
		err := update(root, labels, func(m *apiextensionsv1.JSONSchemaProps) error {
			if m.AdditionalProperties == nil || m.AdditionalProperties.Schema == nil {
				return fmt.Errorf("%v has no value schema", labels)
			}
			m.AdditionalProperties.Schema.MaxLength = ptr(int64(63))
			m.AdditionalProperties.Schema.Pattern = labelValuePattern
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// update calls fn on the schema at a path of property names and stores the
// result back (Properties holds schemas by value).
func update(s *apiextensionsv1.JSONSchemaProps, path []string, fn func(*apiextensionsv1.JSONSchemaProps) error) error {
	if len(path) == 0 {
		return fn(s)
	}
	child, ok := s.Properties[path[0]]
	if !ok {
		return fmt.Errorf("schema has no property %q", path[0])
	}
	if err := update(&child, path[1:], fn); err != nil {
		return err
	}
	s.Properties[path[0]] = child
	return nil
}

func ptr[T any](v T) *T { return &v }

func jsonStrings(vals ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(vals))
	for i, v := range vals {
		out[i] = apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)}
	}
	return out
}
