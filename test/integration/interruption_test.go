//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestSpotInterruptionDeletesTheClaim: a spot interruption notice from the
// cloud provider's stream gets the instance's NodeClaim deleted at once
// (an Event and karpenter_nodeclaims_disrupted_total say why), and the
// reclaimed offering is skipped by the next launch, as upstream.
func TestSpotInterruptionDeletesTheClaim(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	_, provider, stop := startControllerWithProvider(t, scheme)
	defer stop()
	const pool = "spotty"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
		// Its own pods only: the pools of the tests after it must not lose
		// theirs to it.
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: pool, Effect: corev1.TaintEffectNoSchedule}}
	})
	tolerate := corev1.Toleration{Key: pool, Operator: corev1.TolerationOpExists}
	first := createPendingPod(t, kc, "spot-1", "1", tolerate)
	nc := claimOfPool(t, kc, pool)
	node := waitRegistered(t, kc, &nc)
	becomeReady(t, kc, node)
	offering := nc.Labels[v1.LabelInstanceType] + " in " + nc.Labels[v1.LabelZone]
	if nc.Labels[v1.LabelCapacityType] != v1.CapacityTypeSpot {
		t.Fatalf("the claim of a spot pool launched %s", nc.Labels[v1.LabelCapacityType])
	}
	if err := kc.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	before := counterValue(t, "karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": pool, "reason": "spot_interruption"})

	if err := provider.Interrupt(ctx, nc.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the interrupted claim and its Node gone", func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &v1.NodeClaim{})
		if client.IgnoreNotFound(err) != nil || err == nil {
			return false, client.IgnoreNotFound(err)
		}
		err = kc.Get(ctx, client.ObjectKey{Name: node.Name}, &corev1.Node{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	if got := counterValue(t, "karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": pool, "reason": "spot_interruption"}) - before; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=spot_interruption} rose by %v, want 1", got)
	}
	eventually(t, "a SpotInterruption Event on the claim", func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := kc.List(ctx, &list); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == nc.Name && e.Reason == "SpotInterruption" && strings.Contains(e.Note, nc.Status.ProviderID) {
				return true, nil
			}
		}
		return false, nil
	})

	// The next pod of the same shape: its claim launches elsewhere.
	second := createPendingPod(t, kc, "spot-2", "1", tolerate)
	defer func() { _ = kc.Delete(ctx, second) }()
	var next v1.NodeClaim
	eventually(t, "a new claim launched", func(ctx context.Context) (bool, error) {
		var list v1.NodeClaimList
		if err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, err
		}
		for _, c := range list.Items {
			if c.Name != nc.Name && c.Status.ProviderID != "" {
				next = c
				return true, nil
			}
		}
		return false, nil
	})
	if got := next.Labels[v1.LabelInstanceType] + " in " + next.Labels[v1.LabelZone]; got == offering {
		t.Errorf("the replacement launched the reclaimed offering again (%s)", got)
	}
	if err := kc.Delete(ctx, &next); err != nil {
		t.Fatal(err)
	}
	if err := kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}); err != nil {
		t.Fatal(err)
	}
}
