package manifest

import (
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestSchemaRulesNameCRDRules: each schema rule is told by a piece of a
// message one of the CRDs' own x-kubernetes-validations carries, so a
// reworded rule fails here rather than losing its code in silence.
func TestSchemaRulesNameCRDRules(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	var messages []string
	var walk func(s *apiextensionsv1.JSONSchemaProps)
	walk = func(s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		for _, v := range s.XValidations {
			messages = append(messages, v.Message)
		}
		for _, p := range s.Properties {
			walk(&p)
		}
		if s.Items != nil {
			walk(s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
	}
	for _, crd := range all {
		for _, v := range crd.Spec.Versions {
			walk(v.Schema.OpenAPIV3Schema)
		}
	}
	codes := map[SchemaRule]bool{}
	for _, r := range schemaRules {
		if codes[r.rule] {
			t.Errorf("rule %s listed twice", r.rule)
		}
		codes[r.rule] = true
		found := false
		for _, m := range messages {
			found = found || strings.Contains(m, r.contains)
		}
		if !found {
			t.Errorf("rule %s: no CRD rule's message contains %q", r.rule, r.contains)
		}
	}
}

// TestProblemCarriesSchemaRule: a failed CEL rule reaches the Problem as
// its code, which is what lint and the fixes compare.
func TestProblemCarriesSchemaRule(t *testing.T) {
	v := mustValidator(t)
	y := strings.Replace(goodNodePool, "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"10%\"\n        schedule: \"0 9 * * mon-fri\"\n", 1)
	ps := v.Validate(parseOne(t, y))
	for _, p := range ps {
		if p.Rule == RuleBudgetScheduleWithoutDuration {
			if p.Field != "spec.disruption.budgets" || !strings.Contains(p.Fix, "add duration") {
				t.Errorf("problem %+v: want field spec.disruption.budgets and the rule's fix", p)
			}
			return
		}
	}
	t.Fatalf("no problem with rule %s in %v", RuleBudgetScheduleWithoutDuration, ps)
}
