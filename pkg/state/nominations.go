package state

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// Nominations. kube-scheduler tries a pod's status.nominatedNodeName
// before any other node, and keeps room there for it against pods of no
// higher priority (KEP-5278: an autoscaler may nominate a pod to the node
// it launched for it). A host that nominates the pods a claim was launched
// for (provisioning.Policy.NominatesPods) asks the Store which ones
// (Nominate), and the Store remembers: a pod nominated so is still one
// provisioning plans for, where a pod kube-scheduler nominated for a
// preemption is left alone, as upstream leaves it. The memory is the
// host's process's: after a restart, a pod still carrying such a
// nomination waits, as upstream's would, until kube-scheduler tries it
// again and, finding no room on the node, clears it.

// Nominate returns the pods the claim was launched for (LaunchedFor) that
// kube-scheduler has yet to place — unbound, active, for the default
// scheduler, not nominated to another node, not given up on — and
// remembers them as nominated to node, the claim's Node: the host sets
// their status.nominatedNodeName to it before the Node takes pods. A pod
// already nominated there is not returned again. The pods are the Store's:
// read them, never change them.
func (s *Store) Nominate(claim, node string) []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.Pod
	for _, ref := range s.launch.planned[claim] {
		sp := s.pods[ref]
		if sp == nil || s.launch.nominated[ref] == node || s.launch.givenUp[ref] != nil {
			continue
		}
		p := sp.given
		if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || !podutil.IsActive(p) ||
			(p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName) {
			continue
		}
		if s.launch.nominated == nil {
			s.launch.nominated = map[podRef]string{}
		}
		s.launch.nominated[ref] = node
		out = append(out, p)
	}
	return out
}

// OwnNomination: the pod's status.nominatedNodeName is one a host set
// through Nominate, not kube-scheduler's for a preemption.
func (s *Store) OwnNomination(p *corev1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownNomination(p)
}

func (s *Store) ownNomination(p *corev1.Pod) bool {
	n := p.Status.NominatedNodeName
	return n != "" && p.Spec.NodeName == "" && s.launch.nominated[refOf(p)] == n
}

// withoutNomination is p with no status.nominatedNodeName: a shallow copy,
// to read, never to change.
func withoutNomination(p *corev1.Pod) *corev1.Pod {
	cp := *p
	cp.Status.NominatedNodeName = ""
	return &cp
}
