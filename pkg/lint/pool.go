package lint

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// cronHorizon is where the search for a schedule's next hit starts: fixed,
// so a lint run gives the same answer every day. robfig/cron searches five
// years on from it, which a February 29 still hits.
var cronHorizon = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// zoneKeys are the labels a zone-pinned pool constrains.
var zoneKeys = []string{corev1.LabelTopologyZone, "topology.k8s.aws/zone-id"}

// narrowZones: a pool allowed fewer zones than this is zone-pinned.
const narrowZones = 3

// poolFindings are the rules on one NodePool.
// Its complexity is one branch per rule on a NodePool, in rule order.
func (l *Linter) poolFindings(d *manifest.Document, np *v1.NodePool) []Finding {
	var fs []Finding
	spec := np.Spec.Template.Spec
	reqs := scheduling.FromNodePool(np)
	types := l.types.matching(reqs)
	accelerated := len(types) > 0
	for _, t := range types {
		accelerated = accelerated && t.accelerated
	}
	taints := spec.Taints

	if w := weightOf(np); w > 0 && len(taints) == 0 {
		why := ""
		switch {
		case accelerated:
			why = fmt.Sprintf("selects only GPU or accelerator instance types (%s)", sample(types))
		default:
			if i, zones := narrowZoneRequirement(spec.Requirements); i >= 0 {
				why = fmt.Sprintf("allows only %s %s", plural(len(zones), "zone"), strings.Join(zones, ", "))
			}
		}
		if why != "" {
			fs = append(fs, finding(d, RuleWeightWithoutTaint, "spec.weight",
				fmt.Sprintf("weight %d makes this pool the first choice of every pod it can take, and it %s with no taint to keep other pods out", w, why),
				"add a taint under spec.template.spec.taints (and tolerations to the pods meant for it): weight is for preference, taints are for permission"))
		}
	}
	if accelerated && !hasEffect(taints, corev1.TaintEffectNoSchedule) {
		fs = append(fs, finding(d, RuleAcceleratorNoTaint, "spec.template.spec.taints",
			fmt.Sprintf("a GPU or accelerator pool (%s) without a NoSchedule taint: any pod that fits may land on these nodes and keep them up", sample(types)),
			"add under spec.template.spec: taints: [{key: nvidia.com/gpu, effect: NoSchedule}]"))
	}
	if len(np.Spec.Limits) == 0 {
		fs = append(fs, finding(d, RuleNoLimits, "spec",
			"no spec.limits: nothing bounds how many nodes this pool launches (a bad deployment or a runaway HPA is paid for in full)",
			`add spec.limits, e.g. limits: {cpu: "1000", memory: 4000Gi}`))
	}
	if r := reqs.Get(v1.LabelCapacityType); r.Has(v1.CapacityTypeSpot) {
		spot := reqs.Copy()
		spot.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))
		if n := len(l.types.matching(spot)); n < minSpotInstanceTypes {
			fs = append(fs, finding(d, RuleSpotFewTypes, requirementPath(spec.Requirements, v1.LabelCapacityType),
				fmt.Sprintf("spot is allowed, but the requirements match only %s with spot offerings in the catalog (fewer than %d): no spot-to-spot consolidation, and an interruption has few pools to fall back on", plural(n, "instance type"), minSpotInstanceTypes),
				"widen the requirements (instance families or categories rather than instance types, e.g. karpenter.k8s.aws/instance-category In [c, m, r])"))
		}
	}
	for i, b := range np.Spec.Disruption.Budgets {
		if b.Schedule == nil {
			continue
		}
		at := fmt.Sprintf("spec.disruption.budgets[%d]", i)
		if b.Duration == nil {
			fs = append(fs, finding(d, RuleScheduleNoDuration, at+".schedule",
				fmt.Sprintf("budget %d has schedule %q but no duration: the API server rejects it, and a window needs to know how long it stays open", i, *b.Schedule),
				"add duration next to schedule (e.g. duration: 8h), or remove schedule for an always-active budget"))
		}
		sched, err := cron.ParseStandard("TZ=UTC " + *b.Schedule)
		switch {
		case err != nil:
			fs = append(fs, finding(d, RuleCronNeverFires, at+".schedule",
				fmt.Sprintf("schedule %q of budget %d does not parse: %v", *b.Schedule, i, err),
				`write five cron fields, minute hour day-of-month month day-of-week (e.g. "0 9 * * mon-fri"), or @daily`))
		case sched.Next(cronHorizon).IsZero():
			fs = append(fs, finding(d, RuleCronNeverFires, at+".schedule",
				fmt.Sprintf("schedule %q of budget %d never fires (no date matches it), so its window never opens", *b.Schedule, i),
				"fix the day-of-month and month fields (e.g. there is no 30 2: February has at most 29 days)"))
		}
	}
	dis := np.Spec.Disruption
	if dis.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmptyOrUnderutilized && dis.ConsolidateAfter.Duration != nil &&
		*dis.ConsolidateAfter.Duration < minConsolidateAfterSecond*time.Second {
		value := dis.ConsolidateAfter.Duration.String()
		if !written(d, "spec.disruption.consolidateAfter") {
			value += " (the default: it is not set)"
		}
		fs = append(fs, finding(d, RuleConsolidateTooSoon, "spec.disruption.consolidateAfter",
			fmt.Sprintf("consolidateAfter %s with WhenEmptyOrUnderutilized: nodes are replaced as soon as a pod leaves, so every scale-down churns nodes and restarts pods", value),
			"set consolidateAfter: 1m or more (5m–15m for most workloads)"))
	}
	return fs
}

func weightOf(np *v1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

func hasEffect(taints []corev1.Taint, effect corev1.TaintEffect) bool {
	for _, t := range taints {
		if t.Effect == effect {
			return true
		}
	}
	return false
}

// narrowZoneRequirement returns the index and zones of a zone requirement
// allowing fewer than narrowZones zones, or -1.
func narrowZoneRequirement(rs []v1.NodeSelectorRequirementWithMinValues) (int, []string) {
	for i, r := range rs {
		for _, k := range zoneKeys {
			if r.Key == k && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) < narrowZones {
				return i, r.Values
			}
		}
	}
	return -1, nil
}

// requirementPath is the field path of the requirement on key, or of the
// requirements when there is none.
func requirementPath(rs []v1.NodeSelectorRequirementWithMinValues, key string) string {
	for i, r := range rs {
		if r.Key == key {
			return fmt.Sprintf("spec.template.spec.requirements[%d]", i)
		}
	}
	return "spec.template.spec.requirements"
}

// sample names up to three of the types, and how many there are.
func sample(types []catalogType) string {
	var names []string
	for i, t := range types {
		if i == 3 {
			break
		}
		names = append(names, t.name)
	}
	s := strings.Join(names, ", ")
	if len(types) > 3 {
		s += fmt.Sprintf(", … %d types", len(types))
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
