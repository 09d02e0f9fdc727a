package crds_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
)

// The validation below is the API server's, assembled as pkg/manifest's
// Validator assembles it (prune, default, OpenAPI schema, list types, CEL),
// so these tests depend on the CRDs alone and not on the manifest loader.

type kindValidator struct {
	schema     *apiextensionsv1.JSONSchemaProps
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func loadCRDs(t testing.TB) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range all {
		out[c.Spec.Names.Kind] = c
	}
	return out
}

func validators(t testing.TB) map[string]*kindValidator {
	t.Helper()
	out := map[string]*kindValidator{}
	for kind, crd := range loadCRDs(t) {
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("%s: want one version, got %d", kind, len(crd.Spec.Versions))
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(crd.Spec.Versions[0].Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		st, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		out[kind] = &kindValidator{
			schema:     crd.Spec.Versions[0].Schema.OpenAPIV3Schema,
			structural: st,
			validator:  sv,
			cel:        cel.NewValidator(st, true, celconfig.PerCallLimit),
		}
	}
	return out
}

// validate checks obj as a create (or, with old, an update) and returns one
// "path: message" line per problem. It defaults obj in place.
func (kv *kindValidator) validate(obj, old map[string]any) []string {
	var out []string
	unknown := structuralpruning.PruneWithOptions(obj, kv.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(unknown)
	for _, p := range unknown {
		out = append(out, p+": unknown field")
	}
	structuraldefaulting.Default(obj, kv.structural)
	var errs field.ErrorList
	if old != nil {
		structuraldefaulting.Default(old, kv.structural)
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, kv.validator)
	} else {
		errs = apiservervalidation.ValidateCustomResource(nil, obj, kv.validator)
	}
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, kv.structural, obj)...)
	blocking := false
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			blocking = true
		}
	}
	if !blocking {
		var oldObj any
		if old != nil {
			oldObj = old
		}
		celErrs, _ := kv.cel.Validate(context.Background(), nil, kv.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	for _, e := range errs {
		out = append(out, e.Field+": "+e.ErrorBody())
	}
	return out
}

func parseYAML(t testing.TB, s string) map[string]any {
	t.Helper()
	obj, err := decodeYAML([]byte(s))
	if err != nil {
		t.Fatalf("test bug: %v in\n%s", err, s)
	}
	return obj
}

// decodeYAML decodes one YAML object with integers as int64, as the API
// server sees them (CEL tells int from double).
func decodeYAML(b []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	return obj, utiljson.Unmarshal(j, &obj)
}

// set puts a YAML value at a path such as spec.template.spec.taints or
// spec.amiSelectorTerms[0].alias (an index one past the end appends).
func set(obj map[string]any, path string, value any) error {
	parts := strings.Split(path, ".")
	var cur any = obj
	for i, p := range parts {
		name, idx := p, -1
		if j := strings.IndexByte(p, '['); j >= 0 {
			name = p[:j]
			n, err := strconv.Atoi(strings.TrimSuffix(p[j+1:], "]"))
			if err != nil {
				return fmt.Errorf("bad index in %q", p)
			}
			idx = n
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", strings.Join(parts[:i], "."))
		}
		last := i == len(parts)-1
		if idx < 0 {
			if last {
				m[name] = value
				return nil
			}
			if _, ok := m[name]; !ok {
				m[name] = map[string]any{}
			}
			cur = m[name]
			continue
		}
		list, _ := m[name].([]any)
		if idx > len(list) {
			return fmt.Errorf("index %d past the end of %s", idx, name)
		}
		if idx == len(list) {
			var zero any = map[string]any{}
			if last {
				zero = value
			}
			list = append(list, zero)
			m[name] = list
		}
		if last {
			list[idx] = value
			return nil
		}
		cur = list[idx]
	}
	return nil
}

// del removes the field at a path (no indices).
func del(obj map[string]any, path string) {
	parts := strings.Split(path, ".")
	cur := obj
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
	delete(cur, parts[len(parts)-1])
}

// TestCRDsPassTheAPIServersValidation runs the API server's CRD validation,
// which compiles every CEL rule and checks its estimated cost, over the CRDs
// as All returns them (with Patch applied).
func TestCRDsPassTheAPIServersValidation(t *testing.T) {
	for kind, crd := range loadCRDs(t) {
		internal := &apiextensions.CustomResourceDefinition{}
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
			t.Fatal(err)
		}
		internal.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
		if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
			t.Errorf("%s: %v", kind, errs.ToAggregate())
		}
	}
}
