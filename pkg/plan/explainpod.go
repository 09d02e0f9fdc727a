package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// PodExplanation says where a provisioning pass puts a pod, and what each
// NodePool, in the order provisioning tries them, makes of it.
type PodExplanation struct {
	Pod      string            `json:"pod"`
	Requests map[string]string `json:"requests"`
	// Result is what a provisioning pass does with the pod, in words.
	Result string `json:"result"`
	// NodeClaim is the claim it goes on (nil when none).
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`
	// Node is the node (or in-flight claim) it goes to or is bound to.
	Node string `json:"node,omitempty"`
	// Simulator says what the simulator did that provisioning would not
	// (it gave up launching nodes for the pod), "" for none.
	Simulator string        `json:"simulator,omitempty"`
	Pools     []PoolVerdict `json:"nodePools"`
	// Ignored are the input's objects of kinds not modelled (omitted when
	// none).
	Ignored []manifest.Ignored `json:"ignored,omitempty"`
}

// PoolVerdict is one NodePool's answer: a new node of it can run the pod
// (then NodeClaim is the claim it would make for the pod alone), or Why
// not, with the evidence.
type PoolVerdict struct {
	NodePool  string     `json:"nodePool"`
	Weight    int32      `json:"weight"`
	CanRun    bool       `json:"canRun"`
	Why       string     `json:"why,omitempty"`
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`
}

// ExplainPod explains the pod namespace/name ("" namespace: default) of the
// cluster: a pod already bound, or one provisioning leaves alone, says so.
// Its complexity is one early answer per state a pod can be in
// (bound, terminating, a DaemonSet's, given up on, …) before the verdicts.
func ExplainPod(ctx context.Context, c *state.Objects, namespace, name string, policy provisioning.Policy) (*PodExplanation, error) {
	if namespace == "" {
		namespace = corev1.NamespaceDefault
	}
	var pod *corev1.Pod
	for _, p := range c.Pods {
		if podutil.Namespace(p.ObjectMeta) == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s is not there (%d pods are%s)", namespace, name, len(c.Pods), pendingHint(c))
	}
	out := &PodExplanation{Pod: namespace + "/" + name, Requests: map[string]string{}, Pools: []PoolVerdict{}}
	for r, q := range scheduling.PodRequests(pod) {
		out.Requests[string(r)] = q.String()
	}
	c, applied := applyOverlays(c, policy)
	snap := decide.New(policy, decide.Options{}).PrepareSnapshot(c.ProvisioningSnapshot())
	var pending *corev1.Pod
	for _, p := range snap.Pods {
		if podutil.Namespace(p.ObjectMeta) == namespace && p.Name == name {
			pending = p
		}
	}
	switch {
	case pending == nil && pod.Spec.NodeName != "":
		out.Node, out.Result = pod.Spec.NodeName, "bound to node "+pod.Spec.NodeName+": nothing to provision"
		return out, nil
	case pending == nil:
		out.Result = "not a pod provisioning acts on: " + notProvisionable(pod)
		return out, nil
	}
	ex := provisioning.ExplainPod(ctx, snap, pending)
	switch {
	case ex.Existing != "":
		out.Node, out.Result = ex.Existing, "fits node "+ex.Existing+", which is there or on its way: no new node"
	case ex.Claim != nil:
		nc := nodeClaim(ex.Claim)
		nc.NodeOverlays = applied.Behind(nc.NodePool, ex.Claim.InstanceTypes)
		out.NodeClaim, out.Result = &nc, fmt.Sprintf("a new NodeClaim of NodePool %s (with %d pending pod(s) in all)", nc.NodePool, len(nc.Pods))
	case ex.Error != nil && sameVerdicts(ex):
		out.Result = "stays pending: no NodePool can run it"
	case ex.Error != nil:
		out.Result = "stays pending: " + ex.Error.Reason
	}
	pools := map[string]*v1.NodePool{}
	for _, np := range c.NodePools {
		pools[np.Name] = np
	}
	for _, v := range ex.Pools {
		pv := PoolVerdict{NodePool: v.NodePool, Weight: v.Weight, CanRun: v.Plan != nil, Why: v.Reason}
		if v.Code == provisioning.ReasonTopology {
			pv.Why += topologyEvidence(c, pending, pools[v.NodePool])
		}
		if v.Plan != nil {
			nc := nodeClaim(v.Plan)
			nc.NodeOverlays = applied.Behind(nc.NodePool, v.Plan.InstanceTypes)
			pv.NodeClaim = &nc
		}
		out.Pools = append(out.Pools, pv)
	}
	return out, nil
}

// sameVerdicts: the pass left the pod pending for the reasons each pool
// gives it alone, so the pools' verdicts say it all. (With other pending
// pods in the pass a pool may refuse it for another reason — a limit they
// used up — and then the pass's reason is worth its own line.)
func sameVerdicts(ex *provisioning.Explanation) bool {
	if len(ex.Pools) == 0 || len(ex.Error.ByNodePool) != len(ex.Pools) {
		return false
	}
	for _, v := range ex.Pools {
		if v.Plan != nil || ex.Error.ByNodePool[v.NodePool] != v.Reason {
			return false
		}
	}
	return true
}

// topologyEvidence says where the pods the pod's required topology terms
// select run, per domain of each term's key, and which domains of the key
// the NodePool allows: "; pods matching app=db by
// topology.kubernetes.io/zone: us-east-1a 1 (default/db-0); NodePool
// general allows topology.kubernetes.io/zone In [us-east-1a]". Pods that
// have not been placed count nowhere.
func topologyEvidence(c *state.Objects, pod *corev1.Pod, np *v1.NodePool) string {
	terms := topologyTerms(pod)
	labelsOf := map[string]map[string]string{}
	for _, n := range c.StateNodes() {
		labelsOf[n.Name()] = n.Labels()
	}
	var out []string
	for _, t := range terms {
		if e, ok := termEvidence(c, pod, t, labelsOf); ok {
			out = append(out, e)
		}
	}
	seen := map[string]bool{}
	for _, t := range terms {
		if np == nil || seen[t.key] {
			continue
		}
		seen[t.key] = true
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == t.key {
				out = append(out, fmt.Sprintf("NodePool %s allows %s %s %v", np.Name, r.Key, r.Operator, r.Values))
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// firstOf shows at most n items, then how many more.
func firstOf(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// pendingHint names a few pending pods, the ones worth explaining:
// "; pending: a/x, b/y and 3 more".
func pendingHint(c *state.Objects) string {
	pending := c.PendingPods()
	if len(pending) == 0 {
		return "; none is pending"
	}
	names := podNames(pending)
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(names)-5)
	}
	return "; pending: " + strings.Join(names, ", ") + more
}

// notProvisionable says why provisioning leaves a pod alone.
func notProvisionable(p *corev1.Pod) string {
	switch {
	case !podutil.IsActive(p):
		return "it has finished or is being deleted"
	case podutil.IsDaemonSetPod(p):
		return "a DaemonSet pod: it runs where its DaemonSet puts it"
	case podutil.IsMirrorPod(p):
		return "a static (mirror) pod"
	case p.Status.NominatedNodeName != "":
		return "kube-scheduler nominated it to node " + p.Status.NominatedNodeName + " (preemption): Karpenter leaves such pods alone"
	}
	return "kube-scheduler has not found it unschedulable"
}

// SortedRequests are the requests as "cpu 3, memory 4Gi".
func (e *PodExplanation) SortedRequests() string {
	var keys []string
	for k := range e.Requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + e.Requests[k]
	}
	return strings.Join(parts, ", ")
}

// topologyTerm is a required topology term: its key and the pods it
// selects.
type topologyTerm struct {
	key      string
	selector *metav1.LabelSelector
}

// topologyTerms are the pod's required (anti-)affinity terms and its
// DoNotSchedule spread constraints.
func topologyTerms(pod *corev1.Pod) []topologyTerm {
	var terms []topologyTerm
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, topologyTerm{t.TopologyKey, t.LabelSelector})
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, topologyTerm{t.TopologyKey, t.LabelSelector})
			}
		}
	}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable == corev1.DoNotSchedule {
			terms = append(terms, topologyTerm{tsc.TopologyKey, tsc.LabelSelector})
		}
	}
	return terms
}

// termEvidence says where the running pods a term selects are, by domain
// of its key (false for a selector that does not parse).
func termEvidence(c *state.Objects, pod *corev1.Pod, t topologyTerm, labelsOf map[string]map[string]string) (string, bool) {
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		return "", false
	}
	count := map[string]int{}
	names := map[string][]string{}
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" || p == pod || podutil.Namespace(p.ObjectMeta) != podutil.Namespace(pod.ObjectMeta) ||
			!podutil.IsActive(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		d, ok := labelsOf[p.Spec.NodeName][t.key]
		if !ok {
			continue
		}
		count[d]++
		names[d] = append(names[d], podName(p))
	}
	if len(count) == 0 {
		return fmt.Sprintf("no running pod matches %s", sel), true
	}
	domains := slices.Sorted(maps.Keys(count))
	parts := make([]string, len(domains))
	for i, d := range domains {
		sort.Strings(names[d])
		parts[i] = fmt.Sprintf("%s %d (%s)", d, count[d], firstOf(names[d], 3))
	}
	return fmt.Sprintf("pods matching %s by %s: %s", sel, t.key, strings.Join(parts, ", ")), true
}
