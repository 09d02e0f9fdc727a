//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
)

// TestCapacityBuffer: with the CapacityBuffer gate on, a CapacityBuffer of
// two 1-core chunks shaped by a PodTemplate makes Joiner launch a node for
// them — no pod is created — and say so in the buffer's status
// (ReadyForProvisioning, replicas 2, the PodTemplate observed, then
// Provisioning FitsExistingCapacity once the node is there). The node
// stays, empty of pods, through disruption passes of a pool that
// consolidates at 0s; once the buffer is deleted it is consolidated as
// empty.
func TestCapacityBuffer(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	c, stop := runController(t, scheme, kwokProvider(t), func(o *controller.Options) { o.CapacityBuffer = true })
	defer stop()
	const pool = "buffered"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: pool, Effect: corev1.TaintEffectNoSchedule}}
	})
	ns := testNamespace(t, "buffer")
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: ns}, Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "chunk"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": pool}, Tolerations: []corev1.Toleration{{Key: pool, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}}
	if err := kc.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	cb := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: ns},
		Spec: v1beta1.CapacityBufferSpec{PodTemplateRef: &v1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](2)}}
	if err := kc.Create(ctx, cb); err != nil {
		t.Fatal(err)
	}
	nc := claimOfPool(t, kc, pool)
	defer removePool(t, kc, pool, cb)
	node := waitRegistered(t, kc, &nc)
	becomeReady(t, kc, node)

	eventually(t, "the buffer's status", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(cb), cb); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(cb.Status.Conditions, v1beta1.ConditionReadyForProvisioning)
		prov := meta.FindStatusCondition(cb.Status.Conditions, v1beta1.ConditionProvisioning)
		return ready != nil && ready.Reason == v1beta1.ReasonResolved && ptr.Deref(cb.Status.Replicas, 0) == 2 &&
			cb.Status.PodTemplateRef != nil && cb.Status.PodTemplateRef.Name == "chunk" && cb.Status.PodTemplateGeneration != nil &&
			prov != nil && prov.Reason == v1beta1.ReasonFitsExistingCapacity && prov.Message == "All 2 virtual pods fit on existing capacity", nil
	})
	var pods corev1.PodList
	if err := kc.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) != 0 {
		t.Fatalf("the buffer's chunks are virtual, yet %d pods exist (%v)", len(pods.Items), err)
	}
	// Empty of pods, the node is the buffer: disruption leaves it — no
	// command over the controller's own view, and none queued by its passes.
	if dec := disruption.Compute(ctx, c.Store().DisruptionSnapshot(time.Now(), nil), disruption.Options{}); len(dec.Commands) != 0 {
		t.Errorf("disruption would take up the buffer's node: %s", dec.Commands[0])
	}
	for i := 0; i < 3; i++ {
		ev, err := c.Disrupt(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ev {
			t.Errorf("disruption took up the buffer's node: %s %s", e.What, e.Command)
		}
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); err != nil || nc.DeletionTimestamp != nil {
		t.Fatalf("the buffer's node: %v, deleting %v", err, nc.DeletionTimestamp)
	}
	var claims v1.NodeClaimList
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil || len(claims.Items) != 1 {
		t.Fatalf("%d claims of %s (%v): want the one that holds both chunks", len(claims.Items), pool, err)
	}

	// Without the buffer the node is empty, and goes.
	if err := kc.Delete(ctx, cb); err != nil {
		t.Fatal(err)
	}
	eventuallyWithin(t, time.Minute, "the node consolidated once the buffer is gone", func(ctx context.Context) (bool, error) {
		if _, err := c.Disrupt(ctx); err != nil {
			return false, err
		}
		err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &v1.NodeClaim{})
		return apierrors.IsNotFound(err), nil
	})
}
