//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
)

// TestNodeRepair: with NodeRepair on, a node Ready=False past the
// provider's 30-minute toleration has its NodeClaim deleted, as upstream's
// node health controller does; a minute before, nothing happens.
func TestNodeRepair(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	clk := clocktesting.NewFakeClock(time.Now())
	c, stop := runController(t, scheme, func(_ context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		return kwok.New(mgr.GetClient(), catalogTypes(t, catalog.Options{Region: "us-east-1"}), clk)
	}, func(o *controller.Options) { o.Clock, o.NodeRepair = clk, true })
	defer stop()
	const pool = "repair"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: pool, Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
	defer cleanUpClaims(t, kc, pool)
	pod := createPendingPod(t, kc, "repair-1", "1", corev1.Toleration{Key: pool, Operator: corev1.TolerationOpExists})
	defer func() { _ = kc.Delete(ctx, pod) }()
	var nc v1.NodeClaim
	eventually(t, "a claim of the repair pool", func(ctx context.Context) (bool, error) {
		created, err := c.Provision(ctx)
		if len(created) > 0 {
			nc = *created[0]
		}
		return nc.Name != "", err
	})
	node := waitRegistered(t, kc, &nc)
	becomeReady(t, kc, node)
	// The kubelet stops reporting Ready (a patch: the controller writes
	// the Node meanwhile).
	orig := node.DeepCopy()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastHeartbeatTime: metav1.NewTime(clk.Now()), LastTransitionTime: metav1.NewTime(clk.Now())}}
	if err := kc.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the controller sees the node not Ready", func(context.Context) (bool, error) {
		for _, n := range c.Store().Nodes() {
			if n.Node != nil && n.Node.Name == node.Name {
				for _, cond := range n.Node.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionFalse {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	clk.Step(29 * time.Minute)
	if deleted, err := c.Repair(ctx); err != nil || len(deleted) != 0 {
		t.Fatalf("29 minutes not Ready: repaired %v (%v), want nothing before the 30-minute toleration", deleted, err)
	}
	clk.Step(2 * time.Minute)
	deleted, err := c.Repair(ctx)
	if err != nil || len(deleted) != 1 || deleted[0] != nc.Name {
		t.Fatalf("31 minutes not Ready: repaired %v (%v), want claim %s", deleted, err, nc.Name)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); client.IgnoreNotFound(err) != nil || (err == nil && nc.DeletionTimestamp == nil) {
		t.Errorf("the repaired claim is not being deleted (%v)", err)
	}
}
