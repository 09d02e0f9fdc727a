//go:build integration

package integration

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
)

// TestNodeOverlay: with the NodeOverlay gate on, the controller applies the
// cluster's NodeOverlays to its pools' instance types — a savings plan
// makes m7i.large (listed dearer than m6i.large) the cheaper, a capacity
// overlay gives every type the device plugin's resource a pending pod asks
// for — writes each overlay's ValidationSucceeded condition (an
// equal-weight overlay pricing the same offering refused: Conflict), and
// names the overlays on the NodeClaim it creates.
func TestNodeOverlay(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	const pool = "overlaid"
	w10 := int32(10)
	savings, dup := "-30%", "0.01"
	overlays := []*v1alpha1.NodeOverlay{
		{ObjectMeta: metav1.ObjectMeta{Name: "savings"}, Spec: v1alpha1.NodeOverlaySpec{Weight: &w10, PriceAdjustment: &savings,
			Requirements: []v1alpha1.Requirement{{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i.large"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "also-ten"}, Spec: v1alpha1.NodeOverlaySpec{Weight: &w10, Price: &dup,
			Requirements: []v1alpha1.Requirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "fuse"}, Spec: v1alpha1.NodeOverlaySpec{Capacity: corev1.ResourceList{"smarter-devices/fuse": resource.MustParse("4")},
			Requirements: []v1alpha1.Requirement{{Key: v1.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}}}}},
	}
	for _, o := range overlays {
		if err := kc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, o := range overlays {
			_ = kc.Delete(ctx, o)
		}
	}()
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{"m6i.large", "m7i.large"}
	})
	defer cleanUpClaims(t, kc, pool)
	c, stop := runController(t, scheme, func(_ context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		return kwok.New(mgr.GetClient(), catalogTypes(t, catalog.Options{Region: "us-east-1"}), clock.RealClock{})
	}, func(o *controller.Options) { o.NodeOverlay = true })
	defer stop()

	want := map[string]string{"savings": "True", "also-ten": "False", "fuse": "True"}
	eventually(t, "the overlays' ValidationSucceeded conditions", func(ctx context.Context) (bool, error) {
		for name, status := range want {
			var o v1alpha1.NodeOverlay
			if err := kc.Get(ctx, client.ObjectKey{Name: name}, &o); err != nil {
				return false, err
			}
			cond := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionValidationSucceeded)
			if cond == nil || string(cond.Status) != status {
				return false, nil
			}
			if name == "also-ten" && (cond.Reason != v1alpha1.ReasonConflict || !strings.Contains(cond.Message, "savings")) {
				t.Errorf("also-ten: %s %s, want Conflict naming savings", cond.Reason, cond.Message)
			}
		}
		return true, nil
	})

	list := map[string]float64{}
	for _, it := range catalogTypes(t, catalog.Options{Region: "us-east-1"}) {
		if it.Name == "m6i.large" || it.Name == "m7i.large" {
			list[it.Name] = it.Offerings[0].Price
		}
	}
	if list["m7i.large"] <= list["m6i.large"] {
		t.Fatalf("test premise: m7i.large ($%v) lists dearer than m6i.large ($%v)", list["m7i.large"], list["m6i.large"])
	}
	for _, it := range c.Store().ProvisioningSnapshot().InstanceTypes[pool] {
		if it.Name != "m7i.large" {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == v1.CapacityTypeOnDemand && math.Abs(o.Price-list["m7i.large"]*0.7) > 1e-9 {
				t.Errorf("m7i.large %s at $%v in the controller's store, want the savings plan's $%v", o.Zone, o.Price, list["m7i.large"]*0.7)
			}
		}
		if q := it.Capacity["smarter-devices/fuse"]; q.Value() != 4 {
			t.Errorf("m7i.large capacity %v, want the fuse overlay's 4 smarter-devices/fuse", it.Capacity)
		}
	}

	// joiner plan on the live cluster reads the overlays too.
	ps, err := plan.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	reader, err := client.New(cfg, client.Options{Scheme: ps})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := plan.Read(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	live := plan.Run(ctx, objs.State(catalogTypes(t, catalog.Options{Region: "us-east-1"})), time.Now(), plan.Options{})
	refused := ""
	for _, o := range live.NodeOverlays {
		if !o.Applied {
			refused += o.Name
		}
	}
	if len(live.NodeOverlays) != 3 || refused != "also-ten" {
		t.Errorf("a live plan's overlays %+v, want all three, also-ten refused", live.NodeOverlays)
	}

	pendingPodWith(t, kc, "overlay-builder", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["smarter-devices/fuse"] = resource.MustParse("1")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"smarter-devices/fuse": resource.MustParse("1")}
	})
	defer func() {
		_ = kc.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "overlay-builder", Namespace: "default"}})
	}()
	nc := claimOfPool(t, kc, pool)
	if got := nc.Annotations[v1alpha1.AppliedAnnotationKey]; got != "fuse,savings" {
		t.Errorf("claim annotation %s=%q, want fuse,savings", v1alpha1.AppliedAnnotationKey, got)
	}
	if q := nc.Spec.Resources.Requests["smarter-devices/fuse"]; q.Value() != 1 {
		t.Errorf("claim requests %v, want the pod's smarter-devices/fuse", nc.Spec.Resources.Requests)
	}
}
