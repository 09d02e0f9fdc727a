package manifest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
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

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
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
	// The status subresource: the API server resets status on create and
	// ignores it on update, so a kubectl dump validates as its spec does.
	delete(d.Object, "status")
	if oldObj != nil {
		delete(oldObj, "status")
	}
	problems := Deprecations(d)
	if len(problems) > 0 {
		migrated, _ := Migrate(d)
		d.Object = migrated
		d.APIVersion, _ = migrated["apiVersion"].(string)
		d.Kind, _ = migrated["kind"].(string)
	}
	gvk := schema.FromAPIVersionAndKind(d.APIVersion, d.Kind)
	kv, ok := v.kinds[gvk]
	if !ok {
		if len(problems) > 0 {
			return problems // the migration answer says what to do (a Machine is deleted)
		}
		return append(problems, v.unknownKind(d))
	}
	if d.Name == "" {
		problems = append(problems, d.problem("metadata.name", "Required value", "give the object a name under metadata.name"))
	}
	// Quantities first, on the object as written (an open kubelet map
	// included), so a bad one is named with its fix rather than a pattern.
	qps := quantityProblems(d)
	problems = append(problems, qps...)
	quantityAt := map[string]bool{}
	for _, p := range qps {
		quantityAt[p.Field] = true
	}

	unknown := structuralpruning.PruneWithOptions(d.Object, kv.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(unknown)
	for _, path := range unknown {
		if upstreamAccepts(d.Kind, path) {
			p := d.problem(path, "Joiner does not support "+path+" yet; upstream Karpenter accepts it. Joiner checks the rest of the object and simulates it without this field",
				"keep it if you apply this file to Karpenter; nothing to change for Joiner")
			p.Warning = true
			problems = append(problems, p)
			continue
		}
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
	var old any
	if oldObj != nil {
		old = oldObj
	}
	if !hasBlockingError(errs) {
		celErrs, _ := kv.cel.Validate(context.Background(), nil, kv.structural, d.Object, old, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	} else {
		// The API server stops here, so a user fixing one error at a time
		// would meet the CEL rules only on the next apply. Run them on a
		// copy with the failing values set aside, so all show at once.
		errs = append(errs, kv.celOnRepaired(d.Object, old, errs)...)
	}
	for _, e := range errs {
		if quantityAt[e.Field] && strings.Contains(e.Detail, "should match") {
			continue // said above, with the fix
		}
		rule, ruleFix := schemaRuleOf(e)
		p := d.problem(e.Field, errorMessage(e), objectFix(d, e, rule, fixFor(d.Kind, e, rule, ruleFix)))
		p.Rule = rule
		problems = append(problems, p)
	}
	// Migration answers first (they explain the rest), then top to bottom.
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Deprecated != problems[j].Deprecated {
			return problems[i].Deprecated
		}
		return !problems[i].Deprecated && problems[i].Line < problems[j].Line
	})
	return problems
}

// unknownKind answers an object of a Karpenter group Joiner has no schema for.
func (v *Validator) unknownKind(d *Document) Problem {
	group, _ := splitAPIVersion(d.APIVersion)
	if where, ok := upstreamOnlyKinds[d.Kind]; ok {
		p := d.problem("kind", fmt.Sprintf("Joiner does not support %s yet; upstream Karpenter serves it as %s. Joiner's simulations run without it", d.Kind, where),
			"keep it if you apply this file to Karpenter; nothing to change for Joiner")
		p.Warning = true
		return p
	}
	if group != "karpenter.sh" && group != "karpenter.k8s.aws" && strings.HasSuffix(d.Kind, "NodeClass") {
		p := d.problem("kind", fmt.Sprintf("%s is another Karpenter provider's node class (%s): Joiner supports only karpenter.k8s.aws/v1 EC2NodeClass, so it is not checked", d.Kind, group), "")
		p.Warning = true
		return p
	}
	fix := "Joiner validates karpenter.sh/v1 NodePool and NodeClaim, karpenter.sh/v1alpha1 NodeOverlay and karpenter.k8s.aws/v1 EC2NodeClass"
	best, bestD := "", 4
	for k := range currentAPI {
		if dist := editDistance(strings.ToLower(d.Kind), strings.ToLower(k)); dist < bestD {
			best, bestD = k, dist
		}
	}
	if best != "" {
		fix = fmt.Sprintf("did you mean kind: %s (apiVersion: %s)? ", best, currentAPI[best]) + fix
	}
	return d.problem("kind", fmt.Sprintf("Karpenter has no kind %s in %s", d.Kind, d.APIVersion), fix)
}

// celOnRepaired runs the CEL rules on a copy of obj in which the values
// behind blocking schema errors are set aside: a mistyped scalar is read as
// the type the schema wants when it can be ("5" for 5), other bad values are
// removed, and too long strings and lists are cut to their limit. Findings
// on the set-aside values themselves, and rules that could not evaluate
// without them, are dropped: only what the user would meet next is kept.
func (kv *kindValidator) celOnRepaired(obj map[string]any, old any, errs field.ErrorList) (out field.ErrorList) {
	cp := runtime.DeepCopyJSON(obj)
	var setAside []string
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeTypeInvalid, field.ErrorTypeNotSupported, field.ErrorTypeTooLong, field.ErrorTypeTooMany:
		default:
			continue
		}
		if repairAt(cp, kv.structural, splitPath(e.Field), e.Type) && (e.Type == field.ErrorTypeTypeInvalid || e.Type == field.ErrorTypeNotSupported) {
			setAside = append(setAside, e.Field)
		}
	}
	defer func() {
		if recover() != nil { // a rule meeting data the schema did not promise
			out = nil
		}
	}()
	celErrs, _ := kv.cel.Validate(context.Background(), nil, kv.structural, cp, old, celconfig.RuntimeCELCostBudget)
	for _, e := range celErrs {
		if strings.Contains(e.Detail, "evaluating rule:") || strings.Contains(e.Detail, "did not match a supported operator") ||
			strings.Contains(e.Detail, "no such key") {
			continue
		}
		under := false
		for _, p := range setAside {
			under = under || e.Field == p || strings.HasPrefix(e.Field, p+".") || strings.HasPrefix(e.Field, p+"[")
		}
		if !under {
			out = append(out, e)
		}
	}
	return out
}

// repairAt fixes the value at path in obj for a schema error of type t, and
// reports whether it changed anything.
// Its complexity is one case per schema error type and value kind it
// repairs, kept together so the repairs can be read against each other.
func repairAt(obj map[string]any, s *structuralschema.Structural, path []string, t field.ErrorType) bool {
	if len(path) == 0 {
		return false
	}
	var parent any = obj
	for _, seg := range path[:len(path)-1] {
		var next any
		next, s = childOf(parent, s, seg)
		if next == nil || s == nil {
			return false
		}
		parent = next
	}
	last := path[len(path)-1]
	cur, ls := childOf(parent, s, last)
	if ls == nil {
		return false
	}
	set := func(v any) {
		switch p := parent.(type) {
		case map[string]any:
			p[last] = v
		case []any:
			if i, err := strconv.Atoi(last); err == nil && i < len(p) {
				p[i] = v
			}
		}
	}
	remove := func() {
		switch p := parent.(type) {
		case map[string]any:
			delete(p, last)
		case []any:
			set(zeroOf(ls.Type))
		}
	}
	switch t {
	case field.ErrorTypeTypeInvalid:
		if v, ok := coerce(cur, ls.Type); ok {
			set(v)
		} else {
			remove()
		}
	case field.ErrorTypeNotSupported:
		remove()
	case field.ErrorTypeTooLong:
		if str, ok := cur.(string); ok && ls.ValueValidation != nil && ls.ValueValidation.MaxLength != nil && int64(len(str)) > *ls.ValueValidation.MaxLength {
			set(str[:*ls.ValueValidation.MaxLength])
		}
	case field.ErrorTypeTooMany:
		if l, ok := cur.([]any); ok && ls.ValueValidation != nil && ls.ValueValidation.MaxItems != nil && int64(len(l)) > *ls.ValueValidation.MaxItems {
			set(l[:*ls.ValueValidation.MaxItems])
		}
	}
	return true
}

// childOf steps from v (a map or a list) to seg, with its schema.
func childOf(v any, s *structuralschema.Structural, seg string) (any, *structuralschema.Structural) {
	switch t := v.(type) {
	case map[string]any:
		if p, ok := s.Properties[seg]; ok {
			return t[seg], &p
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
			return t[seg], s.AdditionalProperties.Structural
		}
	case []any:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(t) && s.Items != nil {
			return t[i], s.Items
		}
	}
	return nil, nil
}

// coerce reads v as the schema type wants it, when a person's meaning is
// plain: 5 as "5", "5" as 5, "true" as true.
func coerce(v any, typ string) (any, bool) {
	switch typ {
	case "string":
		switch v.(type) {
		case int64, float64, bool:
			return fmt.Sprint(v), true
		}
	case "integer":
		if s, ok := v.(string); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, true
			}
		}
		if f, ok := v.(float64); ok && f == float64(int64(f)) {
			return int64(f), true
		}
	case "number":
		if s, ok := v.(string); ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f, true
			}
		}
	case "boolean":
		if s, ok := v.(string); ok {
			if b, err := strconv.ParseBool(s); err == nil {
				return b, true
			}
		}
	}
	return nil, false
}

func zeroOf(typ string) any {
	switch typ {
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	case "string":
		return ""
	case "integer":
		return int64(0)
	case "number":
		return float64(0)
	case "boolean":
		return false
	}
	return nil
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
// Warnings (what upstream accepts and Joiner does not model) come back with
// the object.
func (v *Validator) Decode(d *Document) (runtime.Object, Problems) {
	ps := v.Validate(d)
	if len(ps.Errors()) > 0 {
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
	case v1alpha1.SchemeGroupVersion.WithKind("NodeOverlay"):
		obj = &v1alpha1.NodeOverlay{}
	case autoscalingv1beta1.SchemeGroupVersion.WithKind("CapacityBuffer"):
		obj = &autoscalingv1beta1.CapacityBuffer{}
	default:
		if len(ps) > 0 { // warnings only: a kind Joiner does not model
			return nil, ps
		}
		return nil, Problems{d.problem("kind", "no Go type for "+d.Kind, "")}
	}
	if err := decodeJSON(d.Object, obj); err != nil {
		return nil, Problems{ValueProblem(d, err, func(o map[string]any) error {
			return decodeJSON(o, reflect.New(reflect.TypeOf(obj).Elem()).Interface())
		})}
	}
	return obj, ps
}

func decodeJSON(o map[string]any, into any) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}
