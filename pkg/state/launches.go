package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// MaxLaunchRounds is how many nodes provisioning launches for a pod that
// then does not bind to them before it stops launching for that pod — the
// launch-loop guard. A pod kube-scheduler keeps refusing the nodes planned
// for it (a DaemonSet's pod keeps it off by anti-affinity, which
// provisioning, as upstream's, does not weigh) would otherwise launch
// nodes that go empty, are consolidated and are launched again, for as
// long as it is pending. Both hosts keep the guard here: a host tells the
// Store which pods a claim was launched for (LaunchedFor) and when
// kube-scheduler has had its chance on the claim's node (SettleLaunch,
// SettleLaunches); the Store counts the misses, gives up on a pod at the
// last one, and leaves given-up pods out of PendingPods and provisioning
// snapshots. A NodePool or DaemonSet added, or its spec changed (its
// generation), may end the loop: every pod given up on is tried again.
const MaxLaunchRounds = 3

// GivenUp is a pod provisioning stopped launching nodes for.
type GivenUp struct {
	Pod *corev1.Pod
	// Claims are the NodeClaims launched for it that it did not bind to,
	// in the order it missed them.
	Claims []string
	// Why kube-scheduler did not put it on the last of them.
	Why string
}

// Reason is the pod's unschedulable reason once given up on.
func (g GivenUp) Reason() string {
	return fmt.Sprintf("launch loop: %d nodes were launched for it and it bound to none (%s); no more are launched for it", len(g.Claims), g.Why)
}

// launches is the guard's record, under the Store's lock.
type launches struct {
	planned map[string][]podRef // claim name → pods it was launched for
	missed  map[podRef][]string // pod → claims it did not bind to
	givenUp map[podRef]*GivenUp
	fresh   []GivenUp // given up since a host last asked
	// specs are the NodePools' and DaemonSets' generations by kind/name.
	specs map[string]int64
}

// LaunchedFor records that the claim was launched for the pods.
func (s *Store) LaunchedFor(claim string, pods []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.launch.planned == nil {
		s.launch.planned = map[string][]podRef{}
	}
	refs := make([]podRef, 0, len(pods))
	for _, p := range pods {
		if !buffer.IsVirtual(p) { // a buffer's chunk never binds: no launch to miss
			refs = append(refs, refOf(p))
		}
	}
	s.launch.planned[claim] = refs
}

// SettleLaunch says kube-scheduler has had its chance to bind the pods the
// claim was launched for to its node: each one still pending missed it
// (one already given up on, bound elsewhere, gone, or nominated by a
// preemption did not). It forgets the claim's plan and returns the pods
// given up on since the host last asked. A claim with no Node, or a Node
// not Ready, settles nothing: its pods had no chance.
func (s *Store) SettleLaunch(claim string) []GivenUp {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked(claim)
	return s.drainGivenUp()
}

// SettleLaunches settles every claim launched for pods whose node has
// been initialized (its claim's Initialized condition) for at least after
// at now — kube-scheduler binds pods to a new node within seconds of its
// becoming ready — and every such claim being deleted (a claim deleted
// outright settles as it goes). It is how a host that does not run the
// scheduler itself (the controller) settles. It returns the pods given up
// on since the host last asked.
func (s *Store) SettleLaunches(now time.Time, after time.Duration) []GivenUp {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, claim := range slices.Sorted(maps.Keys(s.launch.planned)) {
		nc := s.claims[claim]
		if nc == nil {
			delete(s.launch.planned, claim)
			continue
		}
		since, ok := initializedSince(nc)
		if !ok {
			continue
		}
		if nc.DeletionTimestamp != nil || !since.Add(after).After(now) {
			s.settleLocked(claim)
		}
	}
	return s.drainGivenUp()
}

func (s *Store) drainGivenUp() []GivenUp {
	out := s.launch.fresh
	s.launch.fresh = nil
	return out
}

// settleLocked counts the misses of the pods the claim was launched for.
func (s *Store) settleLocked(claim string) {
	refs, ok := s.launch.planned[claim]
	if !ok {
		return
	}
	delete(s.launch.planned, claim)
	v := s.views[s.claimEntry[claim]]
	if v == nil || !v.node.Ready() {
		return
	}
	if v.dirty {
		s.rebuild(v)
	}
	bare := withoutWorkloads(v.built)
	vols := s.volumesLocked()
	for _, ref := range refs {
		if _, unbound := s.unbound[ref]; !unbound || s.launch.givenUp[ref] != nil {
			continue
		}
		p := s.pods[ref].pod
		if !s.provisionable(p) {
			continue
		}
		// Only a refusal of the node itself is a miss: one that holds with
		// nothing but its DaemonSets' pods on it (a taint, a label, its
		// size, a DaemonSet's anti-affinity or port). A pod that lost the
		// node to other pods — as a large scale-out does, kube-scheduler
		// spreading pods over every new node — is not looping.
		why := MissReason(bare, p, vols)
		if why == otherPodsFirst {
			continue
		}
		if s.launch.missed == nil {
			s.launch.missed = map[podRef][]string{}
		}
		s.launch.missed[ref] = append(s.launch.missed[ref], claim)
		if len(s.launch.missed[ref]) < MaxLaunchRounds {
			continue
		}
		g := &GivenUp{Pod: p, Claims: s.launch.missed[ref], Why: why}
		if s.launch.givenUp == nil {
			s.launch.givenUp = map[podRef]*GivenUp{}
		}
		s.launch.givenUp[ref] = g
		delete(s.launch.missed, ref)
		s.launch.fresh = append(s.launch.fresh, *g)
	}
}

// withoutWorkloads is the node with only its DaemonSets' and mirror pods.
func withoutWorkloads(n *provisioning.Node) *provisioning.Node {
	bare := *n
	bare.Version, bare.Requested, bare.Pods = "", nil, nil
	for _, p := range n.Pods {
		if podutil.IsDaemonSetPod(p) || podutil.IsMirrorPod(p) {
			bare.Pods = append(bare.Pods, p)
		}
	}
	return &bare
}

// Unawaited drops the plans that would launch a node only for pods that
// wait on a launch not yet settled whose Node refuses them by itself (see
// settleLocked) — a pass may come between that node's registration and
// its settling, and must not launch a second node for the pods before
// their miss is counted, or the guard never catches up. A pod whose node
// is still on its way, or that other pods beat to its node, is not held
// back: it needs the node the plan gives it — unless binding, when
// kube-scheduler is still binding pods (the host tells): then every plan
// only for pods that wait on a launch not yet settled is dropped. Mid-way
// through a scale-out's binding, the pods bound so far sit where
// kube-scheduler put them, not where the plan did, and what is left of
// the new nodes fits the pods still pending neither as planned nor
// repacked; once kube-scheduler is done, most of them have found room
// after all, and the few that have not get one node sized for them
// (docs/scale.md, session 35). Plans with any other pod are kept.
func (s *Store) Unawaited(plans []*provisioning.NodeClaimPlan, binding bool) []*provisioning.NodeClaimPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.launch.planned) == 0 {
		return plans
	}
	awaiting := map[podRef]string{}
	for _, claim := range slices.Sorted(maps.Keys(s.launch.planned)) {
		for _, ref := range s.launch.planned[claim] {
			awaiting[ref] = claim
		}
	}
	vols := s.volumesLocked()
	held := func(p *corev1.Pod) bool {
		claim, ok := awaiting[refOf(p)]
		if !ok {
			return false
		}
		if binding {
			return true
		}
		v := s.views[s.claimEntry[claim]]
		if v == nil || v.node.Node == nil {
			return false
		}
		if v.dirty {
			s.rebuild(v)
		}
		return MissReason(withoutWorkloads(v.built), p, vols) != otherPodsFirst
	}
	return slices.DeleteFunc(slices.Clone(plans), func(plan *provisioning.NodeClaimPlan) bool {
		for _, p := range plan.Pods {
			if !held(p) {
				return false
			}
		}
		return len(plan.Pods) > 0
	})
}

// LaunchesDue: some claim launched for pods has been initialized for at
// least after at now, and SettleLaunches would settle it.
func (s *Store) LaunchesDue(now time.Time, after time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for claim := range s.launch.planned {
		if nc := s.claims[claim]; nc != nil {
			if since, ok := initializedSince(nc); ok && (nc.DeletionTimestamp != nil || !since.Add(after).After(now)) {
				return true
			}
		}
	}
	return false
}

// AwaitedNodes are the Nodes, by name, of the claims whose launch has not
// settled yet (those registered so far), sorted: where kube-scheduler
// binds the pods a scale-out launched them for.
func (s *Store) AwaitedNodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for claim := range s.launch.planned {
		if v := s.views[s.claimEntry[claim]]; v != nil && v.node.Node != nil {
			out = append(out, v.node.Node.Name)
		}
	}
	slices.Sort(out)
	return out
}

// initializedSince: when the claim's Initialized condition turned True.
func initializedSince(nc *v1.NodeClaim) (time.Time, bool) {
	for _, c := range nc.Status.Conditions {
		if c.Type == v1.ConditionInitialized {
			return c.LastTransitionTime.Time, c.Status == metav1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// GivenUpPods are the pods provisioning gave up on, by namespace and name.
func (s *Store) GivenUpPods() []GivenUp {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GivenUp, 0, len(s.launch.givenUp))
	for _, g := range s.launch.givenUp {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b GivenUp) int {
		return strings.Compare(a.Pod.Namespace+"/"+a.Pod.Name, b.Pod.Namespace+"/"+b.Pod.Name)
	})
	return out
}

// forgetPod drops a pod's misses when it is bound or gone.
func (l *launches) forgetPod(ref podRef) {
	delete(l.missed, ref)
	delete(l.givenUp, ref)
}

// specChanged tries every given-up pod again when a NodePool or DaemonSet
// is added or its spec changes (its generation): that may end the loop. A
// deletion does not, nor does any other change; misses counted so far are
// kept.
func (s *Store) specChanged() {
	specs := make(map[string]int64, len(s.nodePools)+len(s.daemonSets))
	for _, np := range s.nodePools {
		specs["NodePool/"+np.Name] = np.Generation
	}
	for _, ds := range s.daemonSets {
		specs["DaemonSet/"+ds.Namespace+"/"+ds.Name] = ds.Generation
	}
	changed := false
	for k, g := range specs {
		if old, ok := s.launch.specs[k]; !ok || old != g {
			changed = true
			break
		}
	}
	s.launch.specs = specs
	if changed {
		s.launch.givenUp = nil
	}
}

// MissReason says why kube-scheduler does not put the pod on the node
// (volumes: the pods' volumes now, or nil).
func MissReason(node *provisioning.Node, pod *corev1.Pod, volumes provisioning.Volumes) string {
	if err := scheduling.ToleratesForScheduling(node.Taints, pod.Spec.Tolerations); err != nil {
		return "the nodes have a taint it does not tolerate: " + err.Error()
	}
	if why := scheduling.NewNodeAffinity(pod).Unmet(node.Labels); why != "" {
		return "it requires " + why
	}
	res := kubescheduler.NewBinder(kubescheduler.BindOptions{Volumes: func() provisioning.Volumes { return volumes }}).Bind([]*provisioning.Node{node}, []*corev1.Pod{pod})
	if len(res.Unschedulable) > 0 {
		return "the node launched for it cannot run it: " + strings.TrimPrefix(res.Unschedulable[0].Reason, "no existing node can run it: ")
	}
	return otherPodsFirst
}

// otherPodsFirst is MissReason's answer when the node could run the pod.
const otherPodsFirst = "other pods took the nodes launched for it first"

// Misses are the claims the pod has missed so far (none once given up or
// bound): what an operator's tools, and a failing test, can show.
func (s *Store) Misses(namespace, name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.launch.missed[podRef{namespace, name}])
}

// AwaitedLaunches are the claims whose launch has not settled yet, by
// name, with the pods they were launched for.
func (s *Store) AwaitedLaunches() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for claim, refs := range s.launch.planned {
		for _, r := range refs {
			out[claim] = append(out[claim], r.namespace+"/"+r.name)
		}
	}
	return out
}
