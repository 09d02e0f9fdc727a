//go:build integration

package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestVolumeTopology: a pending pod whose claim is unbound, of a
// WaitForFirstConsumer StorageClass allowed only in us-east-1b, gets a
// NodeClaim in us-east-1b, from the controller's informers on claims and
// StorageClasses, as upstream's volume topology does.
func TestVolumeTopology(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()
	const pool = "volumes"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: pool, Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
	defer cleanUpClaims(t, kc, pool)
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal-b"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wait,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{"us-east-1b"}}}}}}
	if err := kc.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kc.Delete(ctx, sc) }()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(sc.Name), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}}
	if err := kc.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kc.Delete(ctx, pvc) }()
	pod := pendingPodWith(t, kc, "volumes-1", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: pool, Operator: corev1.TolerationOpExists}}
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
	})
	defer func() { _ = kc.Delete(ctx, pod) }()
	nc := claimOfPool(t, kc, pool)
	var zones []string
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
			zones = r.Values
		}
	}
	if len(zones) != 1 || zones[0] != "us-east-1b" {
		t.Errorf("the claim allows zones %v, want only us-east-1b", zones)
	}
	node := waitRegistered(t, kc, &nc)
	if z := node.Labels[corev1.LabelTopologyZone]; z != "us-east-1b" {
		t.Errorf("the volume's pod got a node in %s, want us-east-1b (its StorageClass's allowed topology)", z)
	}
}
