package state

import (
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Launch cohorts: the NodeClaims one provisioning pass creates together.
//
// A pass plans its pending pods onto several new nodes at once. Their
// Nodes register seconds apart, and kube-scheduler binds the pending pods
// to whichever Nodes it can see: the first ones fill up with pods in its
// queue's order and the last ones are left part-empty — a placement the
// plan never made, which consolidation then "improves" by replacing those
// nodes a minute later (at a constant workload: evictions for nothing but
// the order the Nodes came up in). Under Joiner's decisions a Node of a
// cohort is therefore registered — its unregistered taint lifted — only
// when every other claim of its cohort has a Node too (or is gone), or
// CohortHold after its own Node appeared, whichever is first (meanwhile
// the controller says so in the claim's Registered condition); the
// cohort's Nodes then open to kube-scheduler together and its
// least-allocated scoring spreads the pods over all of them, as the plan
// did.
// Upstream Karpenter registers each Node at once (--decisions karpenter
// does too).

// AnnotationLaunchCohort on a NodeClaim names the provisioning pass that
// created it with others; claims of one pass carry the same value.
const AnnotationLaunchCohort = "joiner.sh/launch-cohort"

// CohortHold is the longest a Node waits for the rest of its cohort: the
// spread of a batch's boot times on EC2 is seconds, and a member that
// takes longer (or never comes) must not hold pods off the others.
const CohortHold = 15 * time.Second

// CohortMember is what the hold reads of another claim of a cohort.
type CohortMember struct {
	// Appeared: its Node has registered with the API server.
	Appeared bool
	// Gone: the claim is being deleted (a failed launch, say).
	Gone bool
}

// RegistrationHold is how much longer a claim of a cohort, whose Node has
// waited since since (when it appeared), waits before it is registered:
// zero once every other member's Node has appeared too or the member is
// gone, or CohortHold after since.
func RegistrationHold(since time.Time, others []CohortMember, now time.Time) time.Duration {
	left := since.Add(CohortHold).Sub(now)
	if left <= 0 {
		return 0
	}
	for _, m := range others {
		if !m.Appeared && !m.Gone {
			return left
		}
	}
	return 0
}

// Cohort is the claim's launch cohort ("" for a claim launched alone).
func Cohort(nc *v1.NodeClaim) string { return nc.Annotations[AnnotationLaunchCohort] }

// SetCohort puts the claim in the cohort named name ("": none).
func SetCohort(nc *v1.NodeClaim, name string) {
	if name == "" {
		return
	}
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[AnnotationLaunchCohort] = name
}
