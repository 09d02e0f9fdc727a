package manifest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Validator checks objects of Joiner's kinds against their CRDs.
type Validator struct {
	kinds map[schema.GroupVersionKind]*kindValidator
}

type kindValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// NewValidator builds validators from the embedded CRDs.
func NewValidator() (*Validator, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	return NewValidatorFor(all)
}

// NewValidatorFor builds validators from the given CRDs (every served version).
func NewValidatorFor(defs []*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{kinds: map[schema.GroupVersionKind]*kindValidator{}}
	for _, crd := range defs {
		for _, ver := range crd.Spec.Versions {
			if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("CRD %s version %s has no schema", crd.Name, ver.Name)
			}
			internal := &apiextensions.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(ver.Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("converting schema of %s/%s: %w", crd.Name, ver.Name, err)
			}
			st, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("structural schema of %s/%s: %w", crd.Name, ver.Name, err)
			}
			sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("schema validator of %s/%s: %w", crd.Name, ver.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}
			v.kinds[gvk] = &kindValidator{structural: st, schema: sv, cel: cel.NewValidator(st, true, celconfig.PerCallLimit)}
		}
	}
	return v, nil
}

// Knows reports whether the validator has a schema for the kind.
func (v *Validator) Knows(gvk schema.GroupVersionKind) bool { _, ok := v.kinds[gvk]; return ok }

// Validate checks one document as a create: it prunes and reports unknown
// fields, applies the CRD's defaults to d.Object, and runs the OpenAPI
// schema and the CEL rules. Deprecated input is reported first and the rest
// of the checks run on its v1 migration, so every problem shows at once.
func (v *Validator) Validate(d *Document) Problems {
	return v.validate(d, nil)
}

// ValidateUpdate checks d as an update of old, which also runs the CRD's
// transition rules (immutable fields).
func (v *Validator) ValidateUpdate(old, d *Document) Problems {
	return v.validate(d, old.Object)
}

func (v *Validator) validate(d *Document, oldObj map[string]any) Problems {
	problems := Deprecations(d)
	gvk := schema.FromAPIVersionAndKind(d.APIVersion, d.Kind)
	if len(problems) > 0 {
		migrated, ok := Migrate(d)
		if !ok {
			return problems
		}
		d.Object = migrated
		d.APIVersion, _ = migrated["apiVersion"].(string)
		d.Kind, _ = migrated["kind"].(string)
		gvk = schema.FromAPIVersionAndKind(d.APIVersion, d.Kind)
	}
	kv, ok := v.kinds[gvk]
	if !ok {
		return append(problems, d.problem("apiVersion",
			fmt.Sprintf("no schema for %s %s", d.APIVersion, d.Kind),
			"Joiner validates karpenter.sh/v1 NodePool and NodeClaim and karpenter.k8s.aws/v1 EC2NodeClass"))
	}
	if d.Name == "" {
		problems = append(problems, d.problem("metadata.name", "Required value", "give the object a name under metadata.name"))
	}

	unknown := structuralpruning.PruneWithOptions(d.Object, kv.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(unknown)
	for _, path := range unknown {
		problems = append(problems, d.problem(path, "unknown field", unknownFieldFix(kv.structural, path)))
	}
	structuraldefaulting.Default(d.Object, kv.structural)

	var errs field.ErrorList
	if oldObj != nil {
		structuraldefaulting.Default(oldObj, kv.structural)
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, d.Object, oldObj, kv.schema)
	} else {
		errs = apiservervalidation.ValidateCustomResource(nil, d.Object, kv.schema)
	}
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, d.Object, kv.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, kv.structural, d.Object)...)
	// As in the API server, CEL rules run only when no blocking schema error
	// (missing, unsupported, too long, wrong type) would make them meaningless.
	if !hasBlockingError(errs) {
		var old any
		if oldObj != nil {
			old = oldObj
		}
		celErrs, _ := kv.cel.Validate(context.Background(), nil, kv.structural, d.Object, old, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	for _, e := range errs {
		problems = append(problems, d.problem(e.Field, errorMessage(e), fixFor(e)))
	}
	if hasBlockingError(errs) {
		problems = append(problems, d.problem("", "the CEL validation rules were not checked because of the errors above",
			"fix those and validate again"))
	}
	return problems
}

func hasBlockingError(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

func errorMessage(e *field.Error) string {
	msg := e.ErrorBody()
	return strings.TrimSpace(msg)
}

// Decode validates d and decodes it into its Go type (NodePool, NodeClaim,
// EC2NodeClass) with defaults applied.
func (v *Validator) Decode(d *Document) (runtime.Object, Problems) {
	if ps := v.Validate(d); len(ps) > 0 {
		return nil, ps
	}
	var obj runtime.Object
	switch schema.FromAPIVersionAndKind(d.APIVersion, d.Kind) {
	case v1.SchemeGroupVersion.WithKind("NodePool"):
		obj = &v1.NodePool{}
	case v1.SchemeGroupVersion.WithKind("NodeClaim"):
		obj = &v1.NodeClaim{}
	case awsv1.SchemeGroupVersion.WithKind("EC2NodeClass"):
		obj = &awsv1.EC2NodeClass{}
	default:
		return nil, Problems{d.problem("kind", "no Go type for "+d.Kind, "")}
	}
	b, err := json.Marshal(d.Object)
	if err == nil {
		err = json.Unmarshal(b, obj)
	}
	if err != nil {
		return nil, Problems{d.problem("", "decoding: "+err.Error(), "")}
	}
	return obj, nil
}
