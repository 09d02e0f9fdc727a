//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
)

// TestConsolidationMarksTheNextRound: four nodes of one type, a 1-core pod
// on each, a budget of one. One node can go now; two more could go with it
// if the budget allowed (their pods fit on the fourth). The controller
// marks those two joiner.sh/consolidating:PreferNoSchedule — so
// kube-scheduler puts the evicted pod on the node that stays — and the
// first as well while its command waits for validation (a pod bound to it
// meanwhile would cancel the command). This round's node and the next
// round's (the first of the two) carry joiner.sh/consolidating-next as
// well, so a pod that must land on a marked node lands on the later
// round's. Once the budget no longer holds anything back, the node that
// stays carries no mark.
func TestConsolidationMarksTheNextRound(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	c, stop := startController(t, scheme)
	defer stop()
	const pool = "rounds"
	np := createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: pool, Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Template.Spec.Requirements[1].Values = []string{"m6i.2xlarge"}
	})
	defer removePool(t, kc, pool, np)
	toleration := corev1.Toleration{Key: pool, Operator: corev1.TolerationOpExists}
	// Four 7-core pods: one 8-core node each.
	var big []*corev1.Pod
	for i := range 4 {
		big = append(big, createPendingPod(t, kc, fmt.Sprintf("rounds-big-%d", i), "7", toleration))
	}
	var claims v1.NodeClaimList
	eventually(t, "four NodeClaims", func(ctx context.Context) (bool, error) {
		err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool})
		return err == nil && len(claims.Items) == 4, err
	})
	var nodes []string
	for i := range claims.Items {
		node := waitRegistered(t, kc, &claims.Items[i])
		becomeReady(t, kc, node)
		nodes = append(nodes, node.Name)
	}
	// The big pods go; a 1-core pod runs on each node.
	for _, p := range big {
		if err := kc.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	for i, node := range nodes {
		zero := int64(0)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rounds-small-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &zero, Tolerations: []corev1.Toleration{toleration},
				Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
		if err := kc.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = kc.Delete(context.Background(), p, client.GracePeriodSeconds(0)) }()
	}
	eventually(t, "the controller seeing one small pod on each node", func(context.Context) (bool, error) {
		n := 0
		for _, sn := range c.Store().Nodes() {
			if slices.Contains(nodes, sn.Name()) && len(sn.Pods) == 1 && sn.Pods[0].Spec.Containers[0].Resources.Requests.Cpu().Value() == 1 {
				n++
			}
		}
		return n == 4, nil
	})

	setPool := func(mutate func(*v1.NodePool)) {
		t.Helper()
		eventually(t, "NodePool "+pool+" updated", func(ctx context.Context) (bool, error) {
			var cur v1.NodePool
			if err := kc.Get(ctx, client.ObjectKey{Name: pool}, &cur); err != nil {
				return false, err
			}
			mutate(&cur)
			return kc.Update(ctx, &cur) == nil, nil // a conflict: read and try again
		})
	}
	markedWith := func(ctx context.Context, taint corev1.Taint) ([]string, error) {
		var out []string
		for _, name := range nodes {
			var n corev1.Node
			if err := kc.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
				if client.IgnoreNotFound(err) != nil {
					return nil, err
				}
				continue // gone
			}
			if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
				out = append(out, name)
			}
		}
		return out, nil
	}
	marked := func(ctx context.Context) ([]string, error) { return markedWith(ctx, disruption.ConsolidatingTaint) }

	setPool(func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s") })
	var got []string
	var next []string
	eventually(t, "three nodes marked: this round's, while it is validated, and two for the next", func(ctx context.Context) (bool, error) {
		if _, err := c.Disrupt(ctx); err != nil {
			return false, err
		}
		var err error
		if got, err = marked(ctx); err != nil {
			return false, err
		}
		next, err = markedWith(ctx, disruption.ConsolidatingNextTaint)
		return len(got) == 3, err
	})
	if len(next) != 2 || !slices.Contains(got, next[0]) || !slices.Contains(got, next[1]) {
		t.Errorf("marked %v, marked next %v: want two of the three marked next (this round's and the next round's)", got, next)
	}
	// The one this round takes is tainted karpenter.sh/disrupted once
	// validated: one of the three, and only one. The node that stays is
	// not marked.
	var disrupted []string
	eventually(t, "this round's node disrupted after its validation", func(ctx context.Context) (bool, error) {
		if _, err := c.Disrupt(ctx); err != nil {
			return false, err
		}
		disrupted = nil
		for _, sn := range c.Store().Nodes() {
			if slices.Contains(nodes, sn.Name()) && sn.Disrupting() {
				disrupted = append(disrupted, sn.Name())
			}
		}
		return len(disrupted) > 0, nil
	})
	if len(disrupted) != 1 || !slices.Contains(next, disrupted[0]) {
		t.Errorf("disrupted %v, marked next %v: want one node disrupted, one of those marked next", disrupted, next)
	}

	// Nothing held back: the node that stays carries no mark.
	setPool(func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}} })
	eventually(t, "one node left, unmarked", func(ctx context.Context) (bool, error) {
		if _, err := c.Disrupt(ctx); err != nil {
			return false, err
		}
		var staying []string
		for _, sn := range c.Store().Nodes() {
			if slices.Contains(nodes, sn.Name()) && !sn.Disrupting() && !sn.MarkedForDeletion() {
				staying = append(staying, sn.Name())
			}
		}
		got, err := marked(ctx)
		return len(staying) == 1 && !slices.Contains(got, staying[0]), err
	})
}
