//go:build integration

package integration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestStaticNodePool: a NodePool with spec.replicas gets that many
// NodeClaims from the controller's disruption pass, with no pending pod
// asking for them, and scaling it down deletes the surplus claims, as
// upstream's static provisioning and deprovisioning controllers do.
func TestStaticNodePool(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	c, stop := startController(t, scheme)
	defer stop()
	const pool = "static"
	two := int64(2)
	np := createPool(t, kc, pool, func(np *v1.NodePool) { np.Spec.Replicas = &two })
	defer cleanUpClaims(t, kc, pool)
	claims := func(ctx context.Context) ([]v1.NodeClaim, error) {
		var list v1.NodeClaimList
		err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: pool})
		var live []v1.NodeClaim
		for _, nc := range list.Items {
			if nc.DeletionTimestamp == nil {
				live = append(live, nc)
			}
		}
		return live, err
	}
	eventually(t, "two NodeClaims of the static pool", func(ctx context.Context) (bool, error) {
		if _, err := c.Disrupt(ctx); err != nil {
			return false, err
		}
		live, err := claims(ctx)
		return len(live) == 2, err
	})
	// Another pass launches no more.
	if _, err := c.Disrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if live, err := claims(ctx); err != nil || len(live) != 2 {
		t.Fatalf("%d claims after another pass (%v), want 2", len(live), err)
	}
	one := int64(1)
	orig := np.DeepCopy()
	np.Spec.Replicas = &one
	if err := kc.Patch(ctx, np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one NodeClaim left after the scale-down", func(ctx context.Context) (bool, error) {
		if _, err := c.Disrupt(ctx); err != nil {
			return false, err
		}
		live, err := claims(ctx)
		return len(live) == 1, err
	})
}

// cleanUpClaims deletes a pool's claims and the pool, for the tests after.
func cleanUpClaims(t *testing.T, kc client.Client, pool string) {
	t.Helper()
	ctx := context.Background()
	if err := kc.DeleteAllOf(ctx, &v1.NodeClaim{}, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
		t.Error(err)
	}
	_ = kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
}
