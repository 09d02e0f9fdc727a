package plan

import (
	"context"
	"errors"
	"fmt"
	resourceapi "k8s.io/api/resource/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer/kube"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// ErrNoCRD is returned (wrapped) when the cluster does not serve
// karpenter.sh/v1 NodePools or NodeClaims.
var ErrNoCRD = errors.New("the cluster does not serve karpenter.sh/v1 NodePools and NodeClaims: install the CRDs first (kubectl apply -f pkg/apis/crds/, or the Helm chart)")

// NewScheme knows every kind Read lists.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme,
		autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Read lists the objects a plan reads from a live cluster: NodePools,
// NodeClaims, EC2NodeClasses, NodeOverlays and CapacityBuffers (when the
// cluster serves them; a buffer's PodTemplate or workload is read when
// resolved), Nodes, Pods,
// DaemonSets, PodDisruptionBudgets, PersistentVolumeClaims,
// PersistentVolumes and StorageClasses; and it names as left out every
// object of a kind it does not model that the cluster serves (DRA
// objects, VPAs, LimitRanges, ResourceQuotas). It only reads. r's scheme must know
// the core, apps, policy, karpenter.sh and karpenter.k8s.aws types.
// Its complexity is one list per kind, each with its not-served and
// error cases.
func Read(ctx context.Context, r client.Reader) (*Objects, error) {
	out := &Objects{}
	pools := &v1.NodePoolList{}
	if err := list(ctx, r, "NodePools", pools); err != nil {
		return nil, err
	}
	claims := &v1.NodeClaimList{}
	if err := list(ctx, r, "NodeClaims", claims); err != nil {
		return nil, err
	}
	classes := &awsv1.EC2NodeClassList{}
	if err := list(ctx, r, "EC2NodeClasses", classes); err != nil && !errors.Is(err, ErrNoCRD) {
		return nil, err
	}
	overlays := &v1alpha1.NodeOverlayList{}
	if err := list(ctx, r, "NodeOverlays", overlays); err != nil && !errors.Is(err, ErrNoCRD) {
		return nil, err
	}
	for i := range overlays.Items {
		out.NodeOverlays = append(out.NodeOverlays, &overlays.Items[i])
	}
	buffers := &autoscalingv1beta1.CapacityBufferList{}
	if err := list(ctx, r, "CapacityBuffers", buffers); err != nil && !errors.Is(err, ErrNoCRD) {
		return nil, err
	}
	for i := range buffers.Items {
		out.CapacityBuffers = append(out.CapacityBuffers, &buffers.Items[i])
	}
	out.BufferLookup = kube.Lookup(ctx, r)
	nodes, pods, dss, pdbs := &corev1.NodeList{}, &corev1.PodList{}, &appsv1.DaemonSetList{}, &policyv1.PodDisruptionBudgetList{}
	pvcs, pvs, scs := &corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}, &storagev1.StorageClassList{}
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"Nodes", nodes}, {"Pods", pods}, {"DaemonSets", dss}, {"PodDisruptionBudgets", pdbs},
		{"PersistentVolumeClaims", pvcs}, {"PersistentVolumes", pvs}, {"StorageClasses", scs}} {
		if err := list(ctx, r, l.what, l.list); err != nil {
			return nil, err
		}
	}
	for i := range pools.Items {
		out.NodePools = append(out.NodePools, &pools.Items[i])
	}
	if len(out.NodePools) == 0 {
		return nil, errors.New("the cluster has no NodePool: a plan needs at least one (kubectl get nodepools)")
	}
	for i := range claims.Items {
		out.NodeClaims = append(out.NodeClaims, &claims.Items[i])
	}
	for i := range classes.Items {
		out.NodeClasses = append(out.NodeClasses, &classes.Items[i])
	}
	for i := range nodes.Items {
		out.Nodes = append(out.Nodes, &nodes.Items[i])
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		scheduling.DefaultRequestsFromLimits(&p.Spec) // as Load does; the API server has done so already
		out.Pods = append(out.Pods, p)
	}
	for i := range dss.Items {
		out.DaemonSets = append(out.DaemonSets, &dss.Items[i])
	}
	for i := range pdbs.Items {
		out.PDBs = append(out.PDBs, &pdbs.Items[i])
	}
	for i := range pvcs.Items {
		out.PersistentVolumeClaims = append(out.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		out.PersistentVolumes = append(out.PersistentVolumes, &pvs.Items[i])
	}
	for i := range scs.Items {
		out.StorageClasses = append(out.StorageClasses, &scs.Items[i])
	}
	out.VolumesComplete = true
	if err := readDRA(ctx, r, out); err != nil {
		return nil, err
	}
	ignored, err := unmodelledObjects(ctx, r)
	if err != nil {
		return nil, err
	}
	out.Ignored = append(out.Ignored, ignored...)
	return out, nil
}

// readDRA lists the cluster's Dynamic Resource Allocation objects, when
// it serves resource.k8s.io/v1; a kind the user may not list is named so.
func readDRA(ctx context.Context, r client.Reader, out *Objects) error {
	claims, tpls := &resourceapi.ResourceClaimList{}, &resourceapi.ResourceClaimTemplateList{}
	classes, slices := &resourceapi.DeviceClassList{}, &resourceapi.ResourceSliceList{}
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{{"ResourceClaim", claims}, {"ResourceClaimTemplate", tpls}, {"DeviceClass", classes}, {"ResourceSlice", slices}} {
		err := list(ctx, r, l.kind+"s", l.list)
		switch {
		case errors.Is(err, ErrNoCRD):
			return nil // not served here
		case apierrors.IsForbidden(err):
			out.DRADocs = append(out.DRADocs, manifest.Ignored{Kind: l.kind, APIVersion: resourceapi.SchemeGroupVersion.String(), Name: "(any)", File: "the cluster",
				Why: "not listed: the kubeconfig's user may not list them, so any there are left out unseen"})
			continue
		case err != nil:
			return err
		}
	}
	named := func(kind, ns, name string) {
		out.DRADocs = append(out.DRADocs, manifest.Ignored{Kind: kind, APIVersion: resourceapi.SchemeGroupVersion.String(), Namespace: ns, Name: name,
			File: "the cluster", Why: manifest.WhyIgnored(resourceapi.SchemeGroupVersion.String(), kind)})
	}
	for i := range claims.Items {
		out.DRA.Claims = append(out.DRA.Claims, &claims.Items[i])
		named("ResourceClaim", claims.Items[i].Namespace, claims.Items[i].Name)
	}
	for i := range tpls.Items {
		out.DRA.Templates = append(out.DRA.Templates, &tpls.Items[i])
		named("ResourceClaimTemplate", tpls.Items[i].Namespace, tpls.Items[i].Name)
	}
	for i := range classes.Items {
		out.DRA.Classes = append(out.DRA.Classes, &classes.Items[i])
		named("DeviceClass", "", classes.Items[i].Name)
	}
	for i := range slices.Items {
		out.DRA.Slices = append(out.DRA.Slices, &slices.Items[i])
		named("ResourceSlice", "", slices.Items[i].Name)
	}
	return nil
}

// unmodelledKinds are the kinds a cluster may hold that bear on where pods
// run or what they get, and that a plan does not model: each object of
// them the cluster serves is named as left out.
var unmodelledKinds = []schema.GroupVersionKind{
	{Group: "autoscaling.k8s.io", Version: "v1", Kind: "VerticalPodAutoscaler"},
	{Version: "v1", Kind: "LimitRange"},
	{Version: "v1", Kind: "ResourceQuota"},
}

// unmodelledObjects lists the objects of unmodelledKinds the cluster
// serves (a kind it does not serve is skipped), each as left out.
func unmodelledObjects(ctx context.Context, r client.Reader) ([]manifest.Ignored, error) {
	var out []manifest.Ignored
	for _, gvk := range unmodelledKinds {
		objs := &unstructured.UnstructuredList{}
		objs.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := list(ctx, r, gvk.Kind+"s", objs)
		switch {
		case errors.Is(err, ErrNoCRD):
			continue // not served here
		case apierrors.IsForbidden(err):
			out = append(out, manifest.Ignored{Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(), Name: "(any)", File: "the cluster",
				Why: "not listed: the kubeconfig's user may not list them, so any there are left out unseen"})
			continue
		case err != nil:
			return nil, err
		}
		for _, o := range objs.Items {
			apiVersion := gvk.GroupVersion().String()
			out = append(out, manifest.Ignored{Kind: gvk.Kind, APIVersion: apiVersion, Namespace: o.GetNamespace(), Name: o.GetName(),
				File: "the cluster", Why: manifest.WhyIgnored(apiVersion, gvk.Kind)})
		}
	}
	return out, nil
}

// list lists one kind in every namespace, saying what failed.
func list(ctx context.Context, r client.Reader, what string, l client.ObjectList) error {
	err := r.List(ctx, l)
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err):
		return fmt.Errorf("listing %s: %w", what, ErrNoCRD)
	}
	return fmt.Errorf("listing %s: %w", what, err)
}
