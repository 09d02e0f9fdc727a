// Package lint checks the Karpenter manifests a GitOps repository keeps:
// schema and CEL errors and old-API input (through pkg/manifest), and the
// practices the course teaches — weight for preference, taints for
// permission, limits, budgets that open, spot with room to move — each as a
// rule with a stable ID, a severity and a one-line fix. It also compares
// two clusters' manifests (Diff) and a live cluster with Git (Drift).
package lint

// Severity orders findings: a run fails on findings at or above a level.
type Severity int

// The severities, lowest first; their names are SARIF's levels.
const (
	Note Severity = iota
	Warning
	Error
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

// ParseSeverity reads a severity name (error, warning, note).
func ParseSeverity(s string) (Severity, bool) {
	switch s {
	case "error":
		return Error, true
	case "warning":
		return Warning, true
	case "note":
		return Note, true
	}
	return 0, false
}

// Rule is one check: its ID never changes once released, so configuration
// and annotations that name it keep working.
type Rule struct {
	ID       string
	Name     string
	Severity Severity
	// Summary says what the rule finds, for `joiner lint --help` and SARIF.
	Summary string
}

// The rules' IDs.
const (
	RuleInvalid               = "JNR001"
	RuleDeprecated            = "JNR002"
	RuleWeightWithoutTaint    = "JNR003"
	RuleAcceleratorNoTaint    = "JNR004"
	RuleEqualWeightOverlap    = "JNR005"
	RuleNoLimits              = "JNR006"
	RuleSpotFewTypes          = "JNR007"
	RuleScheduleNoDuration    = "JNR008"
	RuleCronNeverFires        = "JNR009"
	RuleConsolidateTooSoon    = "JNR010"
	RuleNoGracePeriodWithPDB  = "JNR011"
	RuleDanglingNodeClassRef  = "JNR012"
	RuleDuplicate             = "JNR013"
	RuleOverlayConflict       = "JNR014"
	RuleOverlaySelectsNothing = "JNR015"
	RuleBufferDanglingRef     = "JNR016"
	RuleBufferIgnoredSetting  = "JNR017"
	RuleReservedWithoutTerms  = "JNR018"
	// RuleDeviceClaimUnsatisfiable: see deviceFindings.
	RuleDeviceClaimUnsatisfiable = "JNR019"
	minSpotInstanceTypes         = 15
	minConsolidateAfterSecond    = 60
)

// Rules are every rule, in ID order.
var Rules = []Rule{
	{RuleInvalid, "invalid", Error, "the API server would reject the object: OpenAPI schema, unknown fields or a CEL rule of the CRD"},
	{RuleDeprecated, "deprecated", Error, "input from an older Karpenter API that karpenter.sh/v1 no longer accepts; --fix rewrites it to its v1 form"},
	{RuleWeightWithoutTaint, "weight-without-taint", Warning, "a weighted NodePool selects special hardware or a narrow zone set but has no taint: weight is for preference, taints are for permission"},
	{RuleAcceleratorNoTaint, "accelerator-without-noschedule-taint", Warning, "a GPU or accelerator NodePool without a NoSchedule taint lets ordinary pods onto expensive nodes"},
	{RuleEqualWeightOverlap, "equal-weight-overlap", Warning, "two NodePools can take the same pods with equal weight: which one launches is left to chance"},
	{RuleNoLimits, "no-limits", Warning, "a NodePool without limits can grow without bound"},
	{RuleSpotFewTypes, "spot-few-instance-types", Warning, "spot allowed with fewer than 15 instance types: no spot-to-spot consolidation, poor interruption resilience"},
	{RuleScheduleNoDuration, "budget-schedule-without-duration", Error, "a disruption budget with a schedule but no duration"},
	{RuleCronNeverFires, "budget-cron-never-fires", Error, "a disruption budget whose schedule never fires (or does not parse), so its window never opens"},
	{RuleConsolidateTooSoon, "consolidate-after-too-short", Warning, "consolidateAfter below 1m with WhenEmptyOrUnderutilized churns nodes as pods come and go"},
	{RuleNoGracePeriodWithPDB, "no-termination-grace-period", Warning, "no terminationGracePeriod while a PodDisruptionBudget in the same manifests can block a drain forever"},
	{RuleDanglingNodeClassRef, "dangling-nodeclassref", Error, "a nodeClassRef names a NodeClass that is not in the same set of manifests"},
	{RuleDuplicate, "duplicate", Error, "an object is defined twice in the same set of manifests; applied, the second replaces the first"},
	{RuleOverlayConflict, "nodeoverlay-conflict", Error, "two NodeOverlays of one weight price the same offering or set the same resource: the later (by name, descending) is refused whole"},
	{RuleOverlaySelectsNothing, "nodeoverlay-selects-nothing", Warning, "a NodeOverlay selects no instance type any NodePool in the same manifests may launch: a misspelt key or value, or a label no pool sets"},
	{RuleBufferDanglingRef, "capacitybuffer-dangling-ref", Warning, "a CapacityBuffer names a PodTemplate or workload that is not in the same set of manifests: until it exists the buffer holds nothing"},
	{RuleBufferIgnoredSetting, "capacitybuffer-ignored-setting", Warning, "a CapacityBuffer setting upstream ignores or refuses: percentage of a PodTemplate, a scalableRef kind it cannot resolve, limits on what a chunk does not request"},
	{RuleReservedWithoutTerms, "reserved-without-reservations", Error, "a NodePool that may launch only into capacity reservations (capacity-type reserved, or a reservation ID) while its EC2NodeClass selects none: it launches nothing"},
	{RuleDeviceClaimUnsatisfiable, "device-claim-unsatisfiable", Warning, "a ResourceClaimTemplate or ResourceClaim asks for devices no instance type the NodePools admit has (more GPUs than the largest, a product none has): with --ignore-dra-requests=false its pods stay pending"},
}

// RuleByID returns the rule with the ID.
func RuleByID(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}
