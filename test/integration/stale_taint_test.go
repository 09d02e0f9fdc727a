//go:build integration

package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestControllerRemovesAStaleDisruptionTaint: the disruption queue lives in
// memory, so a controller killed between tainting a command's candidate
// karpenter.sh/disrupted and terminating it leaves the taint on a node
// whose claim nobody deletes. A fresh controller's disruption pass takes it
// off, as upstream's does: otherwise the node takes no pods and counts as
// disrupting against its NodePool's budgets for good (TestCrashSafety found
// a drift stuck so, its budget of one spent on the node).
func TestControllerRemovesAStaleDisruptionTaint(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	c, stop := startController(t, scheme)
	defer stop()
	createPool(t, kc, "stale", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "stale", Effect: corev1.TaintEffectNoSchedule}}
	})
	pod := createPendingPod(t, kc, "stale", "1", corev1.Toleration{Key: "stale", Operator: corev1.TolerationOpExists})
	defer func() { _ = kc.Delete(ctx, pod) }()
	nc := claimOfPool(t, kc, "stale")
	node := waitRegistered(t, kc, &nc)
	defer func() {
		_ = kc.Delete(ctx, &nc)
		eventually(t, "the claim's Node gone", func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(kc.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})), nil
		})
	}()

	// What the killed controller left behind.
	eventually(t, "the node tainted as a killed controller left it", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedTaint)
		return kc.Update(ctx, node) == nil, nil // a conflict: read and try again
	})
	eventually(t, "the controller seeing the taint", func(context.Context) (bool, error) {
		for _, n := range c.Store().Nodes() {
			if n.Name() == node.Name && n.Disrupting() {
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := c.Disrupt(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stale taint removed", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		return !hasTaintKey(node.Spec.Taints, v1.DisruptedTaint.Key), nil
	})
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); err != nil || nc.DeletionTimestamp != nil {
		t.Errorf("the claim of an untainted node: %v, deleting %v", err, nc.DeletionTimestamp)
	}
}
