package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	resourceapi "k8s.io/api/resource/v1"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// Objects are the manifests a plan reads, as the API server would hold
// them: Karpenter kinds validated and defaulted, the rest decoded strictly.
type Objects struct {
	NodePools   []*v1.NodePool
	NodeClasses []*awsv1.EC2NodeClass
	// NodeOverlays change the instance types' prices and capacity for
	// the plan (see package overlay).
	NodeOverlays []*v1alpha1.NodeOverlay
	NodeClaims   []*v1.NodeClaim
	Nodes        []*corev1.Node
	Pods         []*corev1.Pod
	DaemonSets   []*appsv1.DaemonSet
	PDBs         []*policyv1.PodDisruptionBudget
	// PersistentVolumeClaims, PersistentVolumes and StorageClasses: where
	// the pods' volumes let them run.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// VolumesComplete: those are all the cluster has (a live cluster's
	// lists, or manifests that hold any of them), so a pod whose claim,
	// volume or class is not among them waits, as upstream's.
	VolumesComplete bool
	// Ignored are the documents of kinds a plan does not read, by place.
	Ignored []manifest.Ignored
	// DRA are the Dynamic Resource Allocation objects, which a plan
	// reads under --ignore-dra-requests=false; DRADocs name them, for a
	// host to name as left out otherwise (see IgnoredUnder).
	DRA     provisioning.DRAObjects
	DRADocs []manifest.Ignored
	// CapacityBuffers hold spare capacity for pods not there yet; their
	// chunks are resolved with BufferLookup (see Buffers).
	CapacityBuffers []*autoscalingv1beta1.CapacityBuffer
	BufferLookup    buffer.Lookup
	// targets are the PodTemplates' and workloads' pod templates read from
	// manifests, by kind/namespace/name, for the buffers.
	targets map[string]*buffer.Target
}

// Load reads the YAML files and directories — manifests as written, or
// `kubectl get -o yaml` output — into Objects. Any problem fails the whole
// load, naming file, document and field, as validate does.
func Load(paths []string) (*Objects, error) {
	v, err := manifest.NewValidator()
	if err != nil {
		return nil, err
	}
	out := &Objects{}
	var problems []string
	var loaded []*manifest.Document
	for _, path := range paths {
		files, err := manifest.ManifestFiles(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		for _, f := range files {
			docs, err := manifest.ParseFile(f)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			for _, d := range docs {
				if err := out.add(v, d); err != nil {
					problems = append(problems, err.Error())
					continue
				}
				loaded = append(loaded, d.Header())
			}
		}
	}
	if ps := manifest.Duplicates(loaded); len(ps) > 0 {
		problems = append(problems, ps.Error())
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if len(out.NodePools) == 0 {
		return nil, fmt.Errorf("%s: no NodePool: a plan needs the cluster's karpenter.sh/v1 NodePools (kubectl get nodepools -o yaml)", strings.Join(paths, ", "))
	}
	return out, nil
}

// add decodes one document into the objects of its kind. Its complexity
// is one case per kind a plan reads.
func (o *Objects) add(v *manifest.Validator, d *manifest.Document) error {
	where := func(err error) error {
		var ps manifest.Problems
		if errors.As(err, &ps) {
			return ps
		}
		return fmt.Errorf("%s: %s %q (document %d): %w", d.File, d.Kind, d.Name, d.Doc, err)
	}
	switch d.APIVersion + "/" + d.Kind {
	case "v1/Node":
		n := &corev1.Node{}
		if ps := manifest.DecodeStrict(d, n); len(ps) > 0 {
			return ps
		}
		o.Nodes = append(o.Nodes, n)
		return nil
	case "v1/Pod", "apps/v1/DaemonSet", "policy/v1/PodDisruptionBudget", "v1/PersistentVolumeClaim", "v1/PersistentVolume", "storage.k8s.io/v1/StorageClass":
		obj, ps := manifest.DecodeBuiltin(d)
		if len(ps) > 0 {
			return ps
		}
		switch t := obj.(type) {
		case *corev1.Pod:
			scheduling.DefaultRequestsFromLimits(&t.Spec)
			t.Namespace = podutil.Namespace(t.ObjectMeta)
			o.Pods = append(o.Pods, t)
		case *appsv1.DaemonSet:
			o.DaemonSets = append(o.DaemonSets, t)
		case *policyv1.PodDisruptionBudget:
			t.Namespace = podutil.Namespace(t.ObjectMeta)
			o.PDBs = append(o.PDBs, t)
		case *corev1.PersistentVolumeClaim:
			t.Namespace = podutil.Namespace(t.ObjectMeta)
			o.PersistentVolumeClaims = append(o.PersistentVolumeClaims, t)
			o.VolumesComplete = true
		case *corev1.PersistentVolume:
			o.PersistentVolumes = append(o.PersistentVolumes, t)
			o.VolumesComplete = true
		case *storagev1.StorageClass:
			o.StorageClasses = append(o.StorageClasses, t)
			o.VolumesComplete = true
		}
		return nil
	}
	if manifest.IsKarpenter(d) {
		// Validation reads a manifest as a create, which drops status; a
		// plan needs what the cluster observed of a NodeClaim (providerID,
		// allocatable, conditions).
		status, hasStatus := d.Object["status"].(map[string]any)
		obj, ps := v.Decode(d)
		if len(ps.Errors()) > 0 {
			return where(ps)
		}
		switch t := obj.(type) {
		case *v1.NodePool:
			o.NodePools = append(o.NodePools, t)
		case *v1.NodeClaim:
			if hasStatus {
				b, err := json.Marshal(status)
				if err == nil {
					err = json.Unmarshal(b, &t.Status)
				}
				if err != nil {
					return where(fmt.Errorf("status: %w", err))
				}
			}
			o.NodeClaims = append(o.NodeClaims, t)
		case *awsv1.EC2NodeClass:
			o.NodeClasses = append(o.NodeClasses, t)
		case *v1alpha1.NodeOverlay:
			o.NodeOverlays = append(o.NodeOverlays, t)
		case *autoscalingv1beta1.CapacityBuffer:
			t.Namespace = podutil.Namespace(t.ObjectMeta)
			o.CapacityBuffers = append(o.CapacityBuffers, t)
		default:
			o.Ignored = append(o.Ignored, manifest.NewIgnored(d, ""))
		}
		return nil
	}
	why := ""
	if manifest.IsDRA(d) {
		obj, ps := manifest.DecodeBuiltin(d)
		if len(ps) > 0 {
			return where(ps)
		}
		o.addDRA(obj)
		o.DRADocs = append(o.DRADocs, manifest.NewIgnored(d, ""))
		return nil
	}
	if manifest.IsBuiltin(d) {
		why = "not read: a plan works from the Pods themselves, not their controllers (kubectl get pods -o yaml)"
		if err := o.addTarget(d); err != nil {
			return where(err)
		}
		if d.Kind == "PodTemplate" {
			return nil // read for the CapacityBuffers that name it
		}
	}
	o.Ignored = append(o.Ignored, manifest.NewIgnored(d, why))
	return nil
}

// State is the objects as the engine sees them, with the instance types
// the cloud offers (the same list to every NodePool: each takes the ones
// its requirements allow).
func (o *Objects) State(instanceTypes []*cloudprovider.InstanceType) *state.Objects {
	its := map[string][]*cloudprovider.InstanceType{}
	for _, np := range o.NodePools {
		its[np.Name] = instanceTypes
	}
	pools := append([]*v1.NodePool(nil), o.NodePools...)
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	var bufferPods []*corev1.Pod
	for _, r := range o.Buffers() {
		bufferPods = append(bufferPods, buffer.VirtualPods(r)...)
	}
	return &state.Objects{BufferPods: bufferPods, NodePools: pools, NodeClaims: o.NodeClaims, Nodes: o.Nodes, Pods: o.Pods, DaemonSets: o.DaemonSets,
		PDBs: o.PDBs, InstanceTypes: its, NodeOverlays: o.NodeOverlays, AssumeUnschedulable: true,
		PersistentVolumeClaims: o.PersistentVolumeClaims, PersistentVolumes: o.PersistentVolumes, StorageClasses: o.StorageClasses,
		VolumesComplete: o.VolumesComplete, DRA: &o.DRA}
}

// Region is the region the nodes are in (their topology.kubernetes.io/region
// label), or "" when they do not say or disagree.
func (o *Objects) Region() string {
	region := ""
	for _, n := range o.Nodes {
		r := n.Labels[v1.LabelRegion]
		switch {
		case r == "":
		case region == "":
			region = r
		case r != region:
			return ""
		}
	}
	return region
}

// addDRA files a Dynamic Resource Allocation object, with the API
// server's defaults.
func (o *Objects) addDRA(obj any) {
	switch t := obj.(type) {
	case *resourceapi.ResourceClaim:
		t.Namespace = podutil.Namespace(t.ObjectMeta)
		provisioning.DefaultDeviceClaim(&t.Spec)
		o.DRA.Claims = append(o.DRA.Claims, t)
	case *resourceapi.ResourceClaimTemplate:
		t.Namespace = podutil.Namespace(t.ObjectMeta)
		provisioning.DefaultDeviceClaim(&t.Spec.Spec)
		o.DRA.Templates = append(o.DRA.Templates, t)
	case *resourceapi.DeviceClass:
		o.DRA.Classes = append(o.DRA.Classes, t)
	case *resourceapi.ResourceSlice:
		o.DRA.Slices = append(o.DRA.Slices, t)
	}
}

// IgnoredUnder is what a plan under policy leaves out: the DRA objects
// too when it does not model them.
func (o *Objects) IgnoredUnder(policy provisioning.Policy) []manifest.Ignored {
	if policy.ModelDRA || len(o.DRADocs) == 0 {
		return o.Ignored
	}
	return append(append([]manifest.Ignored(nil), o.Ignored...), o.DRADocs...)
}
