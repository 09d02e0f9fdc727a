package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// TestConsolidationAsKubeSchedulerPlacesPods: x (16 cores) runs a 1-core
// and a 3.5-core pod; e (4 cores) has 1.5 free. The packer moves the small
// pod to e and the large one to a 4-core replacement — but kube-scheduler
// binds the older, small pod first, to the emptiest node (the
// replacement), and the large one then fits nowhere: upstream would
// launch a NodeClaim for it a moment later. Joiner's decisions refuse that
// replacement and say why; upstream's (decisions karpenter) take it.
func TestConsolidationAsKubeSchedulerPlacesPods(t *testing.T) {
	np := nodePool("p")
	medium, large := types()[1], types()[2]
	build := func() *Snapshot {
		small := podOn("1", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour)) })
		big := podOn("3500m", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour)) })
		return cluster(np, node("x", np, large, v1.CapacityTypeOnDemand, small, big), node("e", np, medium, v1.CapacityTypeOnDemand, podOn("2500m")))
	}

	upstream := build()
	upstream.Policy = provisioning.Policy{Decisions: provisioning.DecisionsKarpenter}
	if cmd := only(t, Compute(context.Background(), upstream, Options{})); names(cmd.Candidates) != "x" || len(cmd.Replacements) != 1 {
		t.Fatalf("decisions karpenter: got %s, want x replaced by a 4-core node", cmd)
	}

	cmd := only(t, Compute(context.Background(), build(), Options{}))
	if names(cmd.Candidates) != "e" || len(cmd.Replacements) != 0 {
		t.Fatalf("Joiner's decisions: got %s, want x kept and e deleted (its pod fits on x)", cmd)
	}
	answers, err := ExplainNode(context.Background(), build(), "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var why string
	for _, a := range answers {
		if a.Method == MethodSingleNode {
			why = a.Why
		}
	}
	if !strings.Contains(why, "kube-scheduler would leave 1 of the moved pods pending beside a medium replacement in any zone") {
		t.Errorf("explain x: %q", why)
	}

	// The large pod listed first: in that order kube-scheduler places both,
	// but the replacements may come smallest first — the order checked too.
	bigFirst := build()
	x := bigFirst.Nodes[0].Node
	x.Pods = []*corev1.Pod{x.Pods[1], x.Pods[0]}
	if cmd := only(t, Compute(context.Background(), bigFirst, Options{})); names(cmd.Candidates) != "e" {
		t.Fatalf("the large pod first: got %s, want x kept (smallest first strands the large pod)", cmd)
	}
}

func TestOwnerSpreadIsKubeSchedulersDefaultSelector(t *testing.T) {
	owned := func(kind string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"}}}
		if kind != "" {
			yes := true
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "web-abc", Controller: &yes}}
		}
		return p
	}
	for _, kind := range []string{"ReplicaSet", "StatefulSet", "ReplicationController"} {
		sel := ownerSpread(owned(kind))
		if sel == nil || !sel.Matches(k8slabels.Set{"app": "web", "pod-template-hash": "abc"}) || sel.Matches(k8slabels.Set{"app": "web", "pod-template-hash": "def"}) {
			t.Errorf("%s: selector %v, want the pods of the same template", kind, sel)
		}
	}
	// A bound pod carries its node's zone and region (the PodTopologyLabels
	// admission plugin), a StatefulSet's pod its name, index and revision:
	// none is in its owner's selector, which matches the template's pods
	// in every zone.
	bound := owned("ReplicaSet")
	bound.Labels[corev1.LabelTopologyZone], bound.Labels[corev1.LabelTopologyRegion] = "zone-a", "region"
	if sel := ownerSpread(bound); !sel.Matches(k8slabels.Set{"app": "web", "pod-template-hash": "abc", corev1.LabelTopologyZone: "zone-b", corev1.LabelTopologyRegion: "region"}) {
		t.Errorf("a pod bound in zone-a: selector %v, want it to match the template's pods in zone-b too", sel)
	}
	member := owned("StatefulSet")
	member.Labels = map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": "db-0", "apps.kubernetes.io/pod-index": "0", "controller-revision-hash": "db-1"}
	if sel := ownerSpread(member); !sel.Matches(k8slabels.Set{"app": "db", "statefulset.kubernetes.io/pod-name": "db-1", "apps.kubernetes.io/pod-index": "1", "controller-revision-hash": "db-2"}) {
		t.Errorf("a StatefulSet's db-0: selector %v, want it to match db-1 of another revision", sel)
	}
	for _, kind := range []string{"", "Job", "DaemonSet"} {
		if sel := ownerSpread(owned(kind)); sel != nil {
			t.Errorf("owner %q: selector %v, want none (kube-scheduler spreads only what a Service, ReplicaSet or StatefulSet selects)", kind, sel)
		}
	}
}
