//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestControllerDriftLaunchesOneReplacement: a drifted node's replacement
// is launched once and waited for. The disruption queue asks how far the
// replacement has come in the very step that created it, before the
// informer cache has it: that once read as "failed", so the replacement
// was deleted at once and every pass launched another (TestCrashSafety saw
// drift take minutes so, and a Node leaked by a deletion racing its
// launch).
func TestControllerDriftLaunchesOneReplacement(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	c, stop := startController(t, scheme)
	defer stop()
	const pool = "drifting"
	np := createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // drift only
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: pool, Effect: corev1.TaintEffectNoSchedule}}
	})
	defer func() { _ = kc.Delete(ctx, np) }()
	pod := createPendingPod(t, kc, "drifting", "1", corev1.Toleration{Key: pool, Operator: corev1.TolerationOpExists})
	defer func() { _ = kc.Delete(ctx, pod) }()
	old := claimOfPool(t, kc, pool)
	node := waitRegistered(t, kc, &old)
	becomeReady(t, kc, node)
	// What kube-scheduler and the kubelet do: the pod runs on the node, so
	// drift must replace it rather than just delete it.
	runOn(t, kc, pod, node.Name)
	eventually(t, "the claim initialized and its pod seen on it", func(ctx context.Context) (bool, error) {
		for _, n := range c.Store().Nodes() {
			if n.Name() == node.Name && n.Initialized() && len(n.Pods) == 1 {
				return true, nil
			}
		}
		return false, nil
	})
	created := counterValue(t, "karpenter_nodeclaims_created_total", map[string]string{"nodepool": pool})

	// Drift it: a new template label.
	if err := kc.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Template.Labels["rev"] = "1"
	if err := kc.Patch(ctx, np, patch); err != nil {
		t.Fatal(err)
	}
	var replacement v1.NodeClaim
	eventuallyWithin(t, time.Minute, "a replacement launched", func(ctx context.Context) (bool, error) {
		var list v1.NodeClaimList
		if err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: pool, "rev": "1"}); err != nil || len(list.Items) == 0 {
			return false, err
		}
		replacement = list.Items[0]
		return true, nil
	})
	// The replacement's Node turns Ready (no kwok controller here); the
	// next pass terminates the drifted node.
	becomeReady(t, kc, waitRegistered(t, kc, &replacement))
	eventuallyWithin(t, time.Minute, "the drifted claim deleted", func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKeyFromObject(&old), &old)
		return client.IgnoreNotFound(err) == nil && (err != nil || old.DeletionTimestamp != nil), nil
	})
	if got := counterValue(t, "karpenter_nodeclaims_created_total", map[string]string{"nodepool": pool}) - created; got != 1 {
		t.Errorf("%v NodeClaims created to replace one drifted node, want 1", got)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&replacement), &replacement); err != nil || replacement.DeletionTimestamp != nil {
		t.Errorf("the replacement: %v, deleting %v", err, replacement.DeletionTimestamp)
	}
	if err := kc.Delete(ctx, &replacement); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pool's claims gone", func(ctx context.Context) (bool, error) {
		var list v1.NodeClaimList
		err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: pool})
		return err == nil && len(list.Items) == 0, nil
	})
}
