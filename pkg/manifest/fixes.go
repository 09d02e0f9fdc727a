package manifest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const durationFix = "write a duration in hours, minutes and seconds such as 30s, 15m, 720h or 1h30m, or Never"

// fieldFixes says how to fix a bad value, by field path with list indices
// and map keys removed.
var fieldFixes = map[string]string{
	"spec.disruption.consolidateAfter":            durationFix,
	"spec.template.spec.expireAfter":              durationFix,
	"spec.expireAfter":                            durationFix,
	"spec.template.spec.terminationGracePeriod":   "write a duration such as 30s, 15m or 48h (Never is not allowed here; omit the field to wait indefinitely)",
	"spec.terminationGracePeriod":                 "write a duration such as 30s, 15m or 48h",
	"spec.priceAdjustment":                        "write a signed amount or percentage: +0.5, -0.1, +10% or -15% (at most -100%)",
	"spec.price":                                  "write the price in USD per hour, unsigned: 0.25",
	"spec.disruption.consolidationPolicy":         "use WhenEmpty, WhenEmptyOrUnderutilized or Balanced",
	"spec.disruption.budgets":                     `give each budget both schedule and duration (e.g. schedule: "0 9 * * mon-fri" with duration: 8h), or neither; at most 50 budgets`,
	"spec.disruption.budgets[].nodes":             `a node count such as "5" or a percentage from "0%" to "100%" such as "10%"`,
	"spec.disruption.budgets[].schedule":          `a UTC cron expression with five fields (minute hour day-of-month month day-of-week) such as "0 9 * * mon-fri", or @yearly, @monthly, @weekly, @daily or @hourly`,
	"spec.disruption.budgets[].duration":          "hours and minutes such as 8h, 90m or 1h30m (no seconds)",
	"spec.disruption.budgets[].reasons[]":         "use Underutilized, Empty or Drifted",
	"spec.weight":                                 "a whole number from 1 to 100 (omit weight for 0)",
	"spec.limits[]":                               "a Kubernetes quantity: cpu as cores (1000 or 500m), memory with a binary suffix (1000Gi), nodes as a count",
	"spec.replicas":                               "a whole number of nodes, 0 or more",
	"spec.template.spec.requirements[].operator":  "use one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
	"spec.requirements[].operator":                "use one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
	"spec.template.spec.requirements[].minValues": "minValues is a whole number from 1 to 50, no more than the number of values",
	"spec.template.spec.nodeClassRef":             "reference the node class, e.g. nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}",
	"spec.nodeClassRef":                           "reference the node class, e.g. nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}",
	"spec.template.spec.taints[].effect":          "use NoSchedule, PreferNoSchedule or NoExecute",
}

// SchemaRule names a CRD validation rule (an x-kubernetes-validations
// entry) that failed. The API server reports such a failure only by the
// rule's message, so the message is read here, once, where the schema's
// output is turned into Problems; everything after compares codes.
type SchemaRule string

// The schema rules code elsewhere needs to tell apart.
const (
	RuleRequirementInWithoutValues    SchemaRule = "RequirementInWithoutValues"
	RuleRequirementComparisonValue    SchemaRule = "RequirementComparisonValue"
	RuleRequirementMinValues          SchemaRule = "RequirementMinValues"
	RuleRestrictedLabelNodePool       SchemaRule = "RestrictedLabelNodePool"
	RuleRestrictedLabelHostname       SchemaRule = "RestrictedLabelHostname"
	RuleRestrictedDomainKarpenter     SchemaRule = "RestrictedDomainKarpenter"
	RuleRestrictedDomainKubernetes    SchemaRule = "RestrictedDomainKubernetes"
	RuleRestrictedDomainK8s           SchemaRule = "RestrictedDomainK8s"
	RuleRestrictedDomainAWS           SchemaRule = "RestrictedDomainAWS"
	RuleBudgetScheduleWithoutDuration SchemaRule = "BudgetScheduleWithoutDuration"
	RuleStaticDynamicSwitch           SchemaRule = "StaticDynamicSwitch"
	RuleStaticLimits                  SchemaRule = "StaticLimits"
	RuleStaticWeight                  SchemaRule = "StaticWeight"
	RuleImmutable                     SchemaRule = "Immutable"
	RuleRoleOrInstanceProfile         SchemaRule = "RoleOrInstanceProfile"
	RulePriceAndAdjustment            SchemaRule = "PriceAndAdjustment"
	RuleOverlayCapacityRestricted     SchemaRule = "OverlayCapacityRestricted"
	RuleAMIFamilyRequired             SchemaRule = "AMIFamilyRequired"
	RuleAMIFamilyAlias                SchemaRule = "AMIFamilyAlias"
)

// schemaRules identifies a CEL rule by its message and says how to fix
// its failure (empty when objectFix writes the fix from the object).
var schemaRules = []struct {
	contains string
	rule     SchemaRule
	fix      string
}{
	{"must have a value defined", RuleRequirementInWithoutValues, "give the In requirement at least one value, or use Exists to accept any value"},
	{"must have a single positive integer value", RuleRequirementComparisonValue, `give exactly one non-negative integer, e.g. {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}`},
	{"'minValues' must have at least", RuleRequirementMinValues, "lower minValues, or list at least that many values"},
	{`label "karpenter.sh/nodepool" is restricted`, RuleRestrictedLabelNodePool, "remove it: Joiner sets karpenter.sh/nodepool to the pool's name on every node"},
	{`label "kubernetes.io/hostname" is restricted`, RuleRestrictedLabelHostname, "hostnames are not known before launch; spread pods with topologySpreadConstraints or pod anti-affinity on kubernetes.io/hostname instead"},
	{`label domain "karpenter.sh" is restricted`, RuleRestrictedDomainKarpenter, "only karpenter.sh/capacity-type and karpenter.sh/nodepool may be used; pick a label in your own domain"},
	{`label domain "kubernetes.io" is restricted`, RuleRestrictedDomainKubernetes, "use a well-known key (node.kubernetes.io/instance-type, topology.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/os) or a label in your own domain"},
	{`label domain "k8s.io" is restricted`, RuleRestrictedDomainK8s, "use a label in your own domain"},
	{`label domain "karpenter.k8s.aws" is restricted`, RuleRestrictedDomainAWS, "use a well-known EC2 label such as karpenter.k8s.aws/instance-family, -category, -generation, -cpu, -memory, -gpu-name or -gpu-count (check the spelling)"},
	{"'schedule' must be set with 'duration'", RuleBudgetScheduleWithoutDuration, `add duration (e.g. duration: 8h) next to schedule, or remove schedule`},
	{"static (replicas set) and dynamic", RuleStaticDynamicSwitch, "create a new NodePool instead of adding or removing replicas"},
	{"only 'limits.nodes' is supported on static", RuleStaticLimits, "remove limits other than nodes from the static NodePool"},
	{"'weight' is not supported on static", RuleStaticWeight, "remove weight from the static NodePool"},
	{"is immutable", RuleImmutable, "create a new object instead of changing this field"},
	{"must specify exactly one of ['role', 'instanceProfile']", RuleRoleOrInstanceProfile, "set role (the IAM role name) or instanceProfile, not both"},
	{"cannot set both 'price' and 'priceAdjustment'", RulePriceAndAdjustment, "keep one: price replaces the offering's price, priceAdjustment changes it"},
	{"invalid resource restricted", RuleOverlayCapacityRestricted, "capacity adds extended resources only (e.g. smarter-devices/fuse: \"20\"); cpu, memory, ephemeral-storage and pods are the instance type's"},
	{"must specify amiFamily", RuleAMIFamilyRequired, ""},
	{"amiFamily must be", RuleAMIFamilyAlias, ""},
}

// objectFix makes a fix right for this object where the generic one would
// not be: an alias for the object's own amiFamily, not always al2023.
func objectFix(d *Document, e *field.Error, rule SchemaRule, fix string) string {
	spec, _ := d.Object["spec"].(map[string]any)
	family, _ := spec["amiFamily"].(string)
	switch {
	case e.Type == field.ErrorTypeRequired && e.Field == "spec.amiSelectorTerms":
		if alias, note := aliasFor(family); alias != "" {
			fix = "add amiSelectorTerms:\n  - alias: " + alias + "   # the images amiFamily " + family + " selected; " + aliasPinNote(alias)
			if note != "" {
				fix += "\n(" + note + ")"
			}
			return fix
		}
		if family != "" {
			return "add amiSelectorTerms that select your AMIs, e.g.\namiSelectorTerms:\n  - id: ami-…   # amiFamily " + family + " selects no image by itself"
		}
		return "add amiSelectorTerms with the image family your nodes run, e.g.\namiSelectorTerms:\n  - alias: al2023@latest   # or al2@latest, bottlerocket@latest, windows2022@latest"
	case rule == RuleAMIFamilyRequired:
		return "set amiFamily to the family of the AMIs these terms select (AL2, AL2023, Bottlerocket, Windows2019, Windows2022, or Custom with your own userData), or select images by alias (e.g. - alias: al2023@latest) instead"
	case rule == RuleAMIFamilyAlias:
		return "delete amiFamily (the alias implies it), or make the alias the family's own: " + familyAliasHint(family)
	}
	return fix
}

func familyAliasHint(family string) string {
	if alias, _ := aliasFor(family); alias != "" {
		return "amiFamily " + family + " goes with alias " + alias
	}
	return "al2@… with AL2, al2023@… with AL2023, bottlerocket@… with Bottlerocket, windows2022@latest with Windows2022"
}

// requiredFixes are whole answers for a missing required field, where
// "add the field" would leave the user guessing what to write.
var requiredFixes = map[string]string{
	"spec.template.spec.requirements": "add under spec.template.spec:\n  requirements:\n    - key: karpenter.sh/capacity-type\n      operator: In\n      values: [\"on-demand\"]   # or requirements: [] for every instance type",
	"spec.requirements":               "add under spec:\n  requirements:\n    - key: karpenter.sh/capacity-type\n      operator: In\n      values: [\"on-demand\"]",
	"spec.role":                       "add role: the name of the IAM role your nodes run as (or instanceProfile: an instance profile's name)",
	"spec.subnetSelectorTerms":        "add subnetSelectorTerms:\n  - tags:\n      karpenter.sh/discovery: my-cluster   # a tag your nodes' subnets carry",
	"spec.securityGroupSelectorTerms": "add securityGroupSelectorTerms:\n  - tags:\n      karpenter.sh/discovery: my-cluster   # a tag your nodes' security groups carry",
}

var indexRE = regexp.MustCompile(`\[[^\]]*\]`)

// kindFieldFixes are fieldFixes for the kinds whose fields share a path
// with a NodePool's but not its meaning.
var kindFieldFixes = map[string]map[string]string{
	"CapacityBuffer": {
		"spec.replicas":   "a whole number of buffer chunks (virtual pods), 0 or more",
		"spec.percentage": "a whole percentage of the scalableRef's replicas, 0 or more (20 keeps room for a fifth more pods)",
		"spec.limits[]":   "a Kubernetes quantity: cpu as cores (4 or 500m), memory with a binary suffix (16Gi); they cap the chunks by their summed requests",
	},
}

// schemaRuleOf is the CEL rule a validation error reports, if it is one
// code tells apart, and that rule's fix.
func schemaRuleOf(e *field.Error) (SchemaRule, string) {
	msg := e.ErrorBody()
	for _, m := range schemaRules {
		if strings.Contains(msg, m.contains) {
			return m.rule, m.fix
		}
	}
	return "", ""
}

// fixFor says how to fix a validation error: the rule's own fix for a CEL
// rule, else by the field.
func fixFor(kind string, e *field.Error, rule SchemaRule, ruleFix string) string {
	if rule != "" {
		return ruleFix
	}
	norm := indexRE.ReplaceAllString(e.Field, "[]")
	if strings.HasPrefix(norm, "spec.limits.") {
		norm = "spec.limits[]"
	}
	fix, ok := kindFieldFixes[kind][norm]
	if !ok {
		fix, ok = fieldFixes[norm]
	}
	if e.Type == field.ErrorTypeRequired {
		if f, ok := requiredFixes[norm]; ok {
			return f
		}
		if ok {
			return "add " + e.Field[strings.LastIndex(e.Field, ".")+1:] + ": " + fix
		}
		return "add the field " + e.Field
	}
	if e.Type == field.ErrorTypeNotSupported {
		if guess := closestSupported(fmt.Sprint(e.BadValue), e.Detail); guess != "" {
			fix = "did you mean " + guess + "? " + fix
			if !ok {
				fix = "did you mean " + guess + "?"
			}
			return fix
		}
		if !ok {
			return "use one of the supported values listed"
		}
	}
	if ok {
		return fix
	}
	if strings.HasSuffix(norm, "requirements[].key") {
		return "a label key such as node.kubernetes.io/instance-type or example.com/team"
	}
	return ""
}

// unknownFieldFix suggests the closest field the schema knows at that place.
func unknownFieldFix(s *structuralschema.Structural, path string) string {
	segs := splitPath(path)
	if len(segs) == 0 {
		return "remove it"
	}
	parent := s
	for _, seg := range segs[:len(segs)-1] {
		switch {
		case parent.Items != nil && isIndex(seg):
			parent = parent.Items
		case parent.Properties != nil:
			p, ok := parent.Properties[seg]
			if !ok {
				return "remove it"
			}
			parent = &p
		default:
			return "remove it"
		}
	}
	name := segs[len(segs)-1]
	var known []string
	for k := range parent.Properties {
		known = append(known, k)
	}
	sort.Strings(known)
	best, bestD := "", 4
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return "did you mean " + best + "? Fields here: " + strings.Join(known, ", ")
	}
	if len(known) > 0 {
		return "remove it; fields here: " + strings.Join(known, ", ")
	}
	return "remove it"
}

var quotedRE = regexp.MustCompile(`"([^"]*)"`)

// closestSupported picks the supported value (from an Unsupported value
// error's detail) a misspelt value most likely meant, or "".
func closestSupported(bad, detail string) string {
	best, bestD := "", 3
	for _, m := range quotedRE.FindAllStringSubmatch(detail, -1) {
		if d := editDistance(strings.ToLower(bad), strings.ToLower(m[1])); d < bestD {
			best, bestD = m[1], d
		}
	}
	return best
}

func isIndex(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
