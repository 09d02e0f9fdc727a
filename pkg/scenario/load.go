package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// Input is a loaded scenario: the manifests and scenario.yaml.
type Input struct {
	Name          string
	Scenario      Scenario
	NodePools     []*v1.NodePool
	NodeClasses   []*awsv1.EC2NodeClass
	NodeOverlays  []*v1alpha1.NodeOverlay
	Deployments   []*appsv1.Deployment
	StatefulSets  []*appsv1.StatefulSet
	DaemonSets    []*appsv1.DaemonSet
	Jobs          []*batchv1.Job
	CronJobs      []*batchv1.CronJob
	HPAs          []*autoscalingv2.HorizontalPodAutoscaler
	ScaledObjects []*ScaledObject
	PDBs          []*policyv1.PodDisruptionBudget
	Pods          []*corev1.Pod
	// PriorityClasses give pods their priority, for scheduling order and
	// preemption.
	PriorityClasses []*schedulingv1.PriorityClass
	// Services that select pods make kube-scheduler spread them by default.
	Services []*corev1.Service
	// PersistentVolumeClaims, PersistentVolumes and StorageClasses say
	// where the pods' volumes let them run; a StatefulSet's
	// volumeClaimTemplates make claims of their own.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// CapacityBuffers hold spare capacity for pods not there yet; their
	// podTemplateRefs name PodTemplates.
	CapacityBuffers []*autoscalingv1beta1.CapacityBuffer
	PodTemplates    []*corev1.PodTemplate
	// DRA: the Dynamic Resource Allocation objects, which the simulator
	// models under --ignore-dra-requests=false and names as left out
	// otherwise (DRADocs are their documents, for that).
	DRA     provisioning.DRAObjects
	DRADocs []manifest.Ignored
	// volumeRefs are the claims, volumes and classes the documents name,
	// checked once all are loaded.
	volumeRefs []volumeRef
	// Ignored are the documents the simulator does not act on (kinds it
	// has no model for), by place: the report names each.
	Ignored []manifest.Ignored
	// Notes say what the load assumed or left out (default scenario
	// settings, fields upstream Karpenter accepts that Joiner does not
	// model); the report carries them.
	Notes []string
	// ScenarioFile is the file the Scenario document came from ("" when
	// the directory has none and the defaults were used).
	ScenarioFile string
	// Replay, when set, drives the workloads from a recording (see
	// Replay); the workload kinds above are then empty.
	Replay *Replay
}

// ScaledObject is the part of a KEDA keda.sh/v1alpha1 ScaledObject the
// simulator models: a queue-length scaler.
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			Name string `json:"name"`
			Kind string `json:"kind,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		Triggers        []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

// DefaultStart is a Monday, so weekday budget windows show in a day's run.
var DefaultStart = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// Load reads every YAML file of a scenario directory (in fsys at dir).
// Karpenter kinds are validated as the API server would; workload kinds
// are decoded strictly. Any problem fails the whole load, naming the file,
// document and field; `joiner validate` runs the same checks.
func Load(fsys fs.FS, dir, name string) (*Input, error) {
	in := &Input{Name: name}
	in.Scenario = DefaultScenario()
	files, err := manifest.YAMLFiles(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading scenario %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("scenario %s has no .yaml files", dir)
	}
	v, err := manifest.NewValidator()
	if err != nil {
		return nil, err
	}
	problems, scenarioDoc, loaded := in.read(fsys, files, v)
	if ps := manifest.Duplicates(loaded); len(ps) > 0 {
		problems = append(problems, ps.Error())
	}
	if len(problems) == 0 {
		if ps := in.resolveVolumes(); len(ps) > 0 {
			problems = append(problems, ps.Error())
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if scenarioDoc == nil {
		in.Notes = append(in.Notes, fmt.Sprintf("%s has no scenario.yaml: the default scenario settings were used (start %s, %s, seed %d, no load patterns or faults)",
			dir, in.Scenario.Spec.Start.Format("Mon 2006-01-02 15:04 MST"), in.Scenario.Spec.Duration.Duration, in.Scenario.Spec.Seed))
	}
	if len(in.NodePools) == 0 {
		return nil, fmt.Errorf("scenario %s has no NodePool: add a karpenter.sh/v1 NodePool manifest", dir)
	}
	if ps := manifest.DanglingNodeClassRefs(loaded, "the scenario"); len(ps) > 0 {
		return nil, ps
	}
	return in, nil
}

func (in *Input) add(v *manifest.Validator, d *manifest.Document) error {
	if manifest.IsBuiltin(d) {
		obj, ps := manifest.DecodeBuiltin(d)
		if len(ps) > 0 {
			return ps
		}
		defaultPodSpecs(obj)
		in.volumeRefs = append(in.volumeRefs, volumeRefsOf(d, obj)...)
		in.addBuiltin(obj)
		if manifest.IsDRA(d) {
			in.DRADocs = append(in.DRADocs, manifest.NewIgnored(d, ""))
		}
		return nil
	}
	switch d.APIVersion + "/" + d.Kind {
	case "keda.sh/v1alpha1/ScaledObject":
		so := &ScaledObject{}
		if err := decodeLoose(d.Object, so); err != nil {
			return err
		}
		in.ScaledObjects = append(in.ScaledObjects, so)
		return nil
	case "apps/v1/ReplicaSet":
		in.Ignored = append(in.Ignored, manifest.NewIgnored(d, "not simulated on its own: the simulator makes a Deployment's ReplicaSets itself"))
		return nil
	}
	if manifest.IsKarpenter(d) {
		obj, ps := v.Decode(d)
		if len(ps.Errors()) > 0 {
			return ps
		}
		for _, w := range ps { // warnings: what upstream accepts and Joiner does not model
			note := fmt.Sprintf("%s: %s %s: ", w.File, w.Kind, w.Name)
			if w.Field != "" && w.Field != "kind" {
				note += w.Field + ": "
			}
			in.Notes = append(in.Notes, note+w.Message)
		}
		in.addKarpenter(obj, d)
		return nil
	}
	in.Ignored = append(in.Ignored, manifest.NewIgnored(d, ""))
	return nil
}

// addBuiltin files a decoded Kubernetes object under its kind. Its
// complexity is one case a kind: a table of kinds would need a type
// switch all the same.
func (in *Input) addBuiltin(obj any) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		in.Deployments = append(in.Deployments, o)
	case *appsv1.StatefulSet:
		in.StatefulSets = append(in.StatefulSets, o)
	case *appsv1.DaemonSet:
		in.DaemonSets = append(in.DaemonSets, o)
	case *batchv1.Job:
		if metav1.GetControllerOf(o) == nil { // Jobs of a CronJob come from the CronJob
			in.Jobs = append(in.Jobs, o)
		}
	case *batchv1.CronJob:
		in.CronJobs = append(in.CronJobs, o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		in.HPAs = append(in.HPAs, o)
	case *policyv1.PodDisruptionBudget:
		in.PDBs = append(in.PDBs, o)
	case *schedulingv1.PriorityClass:
		in.PriorityClasses = append(in.PriorityClasses, o)
	case *corev1.Service:
		in.Services = append(in.Services, o)
	case *corev1.PersistentVolumeClaim:
		o.Namespace = podutil.Namespace(o.ObjectMeta)
		in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, o)
	case *corev1.PersistentVolume:
		in.PersistentVolumes = append(in.PersistentVolumes, o)
	case *storagev1.StorageClass:
		in.StorageClasses = append(in.StorageClasses, o)
	case *corev1.PodTemplate:
		o.Namespace = podutil.Namespace(o.ObjectMeta)
		in.PodTemplates = append(in.PodTemplates, o)
	case *corev1.Pod:
		if metav1.GetControllerOf(o) == nil { // owned pods come from their controller
			in.Pods = append(in.Pods, o)
		}
	case *resourceapi.ResourceClaim:
		o.Namespace = podutil.Namespace(o.ObjectMeta)
		in.DRA.Claims = append(in.DRA.Claims, o)
	case *resourceapi.ResourceClaimTemplate:
		o.Namespace = podutil.Namespace(o.ObjectMeta)
		in.DRA.Templates = append(in.DRA.Templates, o)
	case *resourceapi.DeviceClass:
		in.DRA.Classes = append(in.DRA.Classes, o)
	case *resourceapi.ResourceSlice:
		in.DRA.Slices = append(in.DRA.Slices, o)
	}
}

// addKarpenter files a decoded Karpenter object under its kind; d is the
// document it came from.
func (in *Input) addKarpenter(obj any, d *manifest.Document) {
	switch o := obj.(type) {
	case *v1.NodePool:
		in.NodePools = append(in.NodePools, o)
	case *awsv1.EC2NodeClass:
		in.NodeClasses = append(in.NodeClasses, o)
	case *v1alpha1.NodeOverlay:
		in.NodeOverlays = append(in.NodeOverlays, o)
	case *autoscalingv1beta1.CapacityBuffer:
		o.Namespace = podutil.Namespace(o.ObjectMeta)
		in.CapacityBuffers = append(in.CapacityBuffers, o)
	case *v1.NodeClaim:
		in.Ignored = append(in.Ignored, manifest.NewIgnored(d, "the simulator launches its own NodeClaims"))
	case nil:
		in.Ignored = append(in.Ignored, manifest.NewIgnored(d, ""))
	}
}

// read decodes every document of files: the Scenario document (at most
// one), the objects it keeps (the documents loaded, for the checks across
// them) and the problems, each naming its file, document and field.
func (in *Input) read(fsys fs.FS, files []string, v *manifest.Validator) (problems []string, scenarioDoc *manifest.Document, loaded []*manifest.Document) {
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		// Document by document: a big file's content is never all in
		// memory (see manifest.Each).
		err = manifest.Each(f, b, func(d *manifest.Document) error {
			if IsScenarioDocument(d) {
				if scenarioDoc != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: a scenario has one Scenario document; the first is at %s:%d",
						d.File, d.Line, scenarioDoc.File, scenarioDoc.Line))
					return nil
				}
				scenarioDoc = d
				s, err := decodeScenario(d, in.Scenario)
				if err != nil {
					problems = append(problems, err.Error())
					return nil
				}
				in.Scenario = s
				in.ScenarioFile = d.File
				return nil
			}
			where := fmt.Sprintf("%s: %s %q (document %d)", f, d.Kind, d.Name, d.Doc)
			if err := in.add(v, d); err != nil {
				var ps manifest.Problems
				if errors.As(err, &ps) {
					problems = append(problems, ps.Error())
				} else {
					problems = append(problems, where+": "+err.Error())
				}
				return nil
			}
			if manifest.IsBuiltin(d) {
				d = d.Header() // decoded: what the checks below need of it is its name
			}
			loaded = append(loaded, d)
			return nil
		})
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems, scenarioDoc, loaded
}
