package provisioning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// PoolVerdict is a NodePool's answer for one pod: whether a new node of it
// could run the pod in the cluster a snapshot describes.
type PoolVerdict struct {
	NodePool string
	Weight   int32
	// Reason is the first thing that keeps the pool from running the pod
	// (the taint it does not tolerate, the requirement in conflict with
	// both sides' values, the limit with its usage, the largest instance
	// type with the pod's requests, …); "" when it can. Code is its kind.
	Reason string
	Code   ReasonCode
	// Err is the reason itself, for its evidence: a *Reason, a
	// scheduling.UntoleratedTaintError or IncompatibleError, or a topology
	// constraint's error; nil when the pool can run the pod.
	Err error
	// Plan, when it can, is a new claim of the pool for the pod alone: its
	// instance types cheapest first.
	Plan *NodeClaimPlan
}

// Explanation is what ExplainPod finds for a pod.
type Explanation struct {
	// Result is what a provisioning pass over the snapshot does with the
	// pod: Existing names the node (or in-flight claim) it goes to, Claim
	// the new claim it goes on, Error why it goes nowhere (one of them).
	Existing string
	Claim    *NodeClaimPlan
	Error    *PodError
	// Pools are every NodePool's verdict, in the order provisioning tries
	// them (weight, then name).
	Pools []PoolVerdict
}

// ExplainPod runs a provisioning pass over the snapshot (its pending pods,
// which must include pod) to say where pod goes, and asks each NodePool in
// turn whether a new node of it could run the pod beside the snapshot's
// nodes — the limits they use, the topology their pods make.
func ExplainPod(ctx context.Context, snap *Snapshot, pod *corev1.Pod) *Explanation {
	out := &Explanation{}
	res := Solve(ctx, snap)
	for _, e := range res.ExistingNodes {
		for _, p := range e.Pods {
			if p == pod {
				out.Existing = e.Node.Name
			}
		}
	}
	for _, cl := range res.NewNodeClaims {
		for _, p := range cl.Pods {
			if p == pod {
				out.Claim = cl
			}
		}
	}
	for _, pe := range res.Unschedulable {
		if pe.Pod == pod {
			out.Error = pe
		}
	}

	alone := *snap
	alone.Pods = []*corev1.Pod{pod}
	alone.DaemonSets = snap.Policy.OverheadDaemonSets(snap.DaemonSets) // as Solve's Planner counts them
	s := newScheduler(&alone)
	c := s.prepare(&alone, alone.Nodes)[pod]
	for pi, p := range s.pools {
		v := PoolVerdict{NodePool: p.np.Name, Weight: p.np.WeightOrZero()}
		if c.invalid != nil {
			v.Reason = c.invalidReason()
		}
		// As Solve: preferences relaxed one at a time until the pod fits;
		// the reason is the one left with all of them relaxed.
		for rc := c; rc != nil && c.invalid == nil; rc = s.relaxedClass(rc) {
			cl, err := s.newClaim(p, pi, rc, pod)
			if err == nil {
				plan, why := s.finalize(cl)
				if why == nil {
					v.Reason, v.Code, v.Plan = "", ReasonOther, plan
					break
				}
				err = why
			}
			v.Reason, v.Code, v.Err = err.Error(), CodeOf(err), err
		}
		out.Pools = append(out.Pools, v)
	}
	return out
}
