package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// Input is a loaded scenario: the manifests and scenario.yaml.
type Input struct {
	Name          string
	Scenario      Scenario
	NodePools     []*v1.NodePool
	NodeClasses   []*awsv1.EC2NodeClass
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
	// Skipped counts documents of kinds the simulator has no model for.
	Skipped map[string]int
	// poolDocs are the documents NodePools came from, for errors.
	poolDocs map[*v1.NodePool]*manifest.Document
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

// deprecatedWorkloads maps removed workload API versions to their replacement.
var deprecatedWorkloads = map[string]string{
	"extensions/v1beta1":         "apps/v1",
	"apps/v1beta1":               "apps/v1",
	"apps/v1beta2":               "apps/v1",
	"autoscaling/v2beta1":        "autoscaling/v2",
	"autoscaling/v2beta2":        "autoscaling/v2",
	"batch/v1beta1":              "batch/v1",
	"policy/v1beta1":             "policy/v1",
	"scheduling.k8s.io/v1beta1":  "scheduling.k8s.io/v1",
	"scheduling.k8s.io/v1alpha1": "scheduling.k8s.io/v1",
}

// DefaultStart is a Monday, so weekday budget windows show in a day's run.
var DefaultStart = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// Load reads every YAML file of a scenario directory (in fsys at dir).
// Karpenter kinds are validated as the API server would; workload kinds
// are decoded strictly. Any problem fails the whole load, naming the file,
// document and field.
func Load(fsys fs.FS, dir, name string) (*Input, error) {
	in := &Input{Name: name, Skipped: map[string]int{}}
	in.Scenario.APIVersion, in.Scenario.Kind = ScenarioAPIVersion, ScenarioKind
	in.Scenario.Spec.Start = DefaultStart
	in.Scenario.Spec.Duration = metav1.Duration{Duration: 24 * time.Hour}
	in.Scenario.Spec.Seed = 1
	var files []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading scenario %s: %w", dir, err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("scenario %s has no .yaml files", dir)
	}
	v, err := manifest.NewValidator()
	if err != nil {
		return nil, err
	}
	var problems []string
	sawScenario := false
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		docs, err := manifest.Parse(f, b)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, d := range docs {
			where := fmt.Sprintf("%s: %s %q (document %d)", f, d.Kind, d.Name, d.Doc)
			if err := in.add(v, d, &sawScenario); err != nil {
				var ps manifest.Problems
				if errors.As(err, &ps) {
					problems = append(problems, ps.Error())
				} else {
					problems = append(problems, where+": "+err.Error())
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if err := in.Scenario.validate(path.Join(dir, "scenario.yaml")); err != nil {
		return nil, err
	}
	if len(in.NodePools) == 0 {
		return nil, fmt.Errorf("scenario %s has no NodePool: add a karpenter.sh/v1 NodePool manifest", dir)
	}
	if ps := in.danglingNodeClassRefs(); len(ps) > 0 {
		return nil, ps
	}
	return in, nil
}

func (in *Input) add(v *manifest.Validator, d *manifest.Document, sawScenario *bool) error {
	if repl, ok := deprecatedWorkloads[d.APIVersion]; ok {
		return fmt.Errorf("apiVersion %s is no longer served; use apiVersion: %s", d.APIVersion, repl)
	}
	switch d.APIVersion + "/" + d.Kind {
	case ScenarioAPIVersion + "/" + ScenarioKind:
		if *sawScenario {
			return errors.New("a scenario has one Scenario document")
		}
		*sawScenario = true
		s := in.Scenario
		if err := decodeStrict(d.Object, &s); err != nil {
			if strings.Contains(err.Error(), "unknown field") {
				return fmt.Errorf("%w (fields: start, duration, seed, region, zones, catalog, loads, jobs, events, faults)", err)
			}
			return valueProblem(d, err, func(o map[string]any) error { return decodeStrict(o, &Scenario{}) })
		}
		in.Scenario = s
		return nil
	case "apps/v1/Deployment":
		return decodeInto(d, &in.Deployments)
	case "apps/v1/StatefulSet":
		return decodeInto(d, &in.StatefulSets)
	case "apps/v1/DaemonSet":
		return decodeInto(d, &in.DaemonSets)
	case "batch/v1/Job":
		j := &batchv1.Job{}
		if err := decodeDoc(d, j); err != nil {
			return err
		}
		if metav1.GetControllerOf(j) == nil { // Jobs of a CronJob come from the CronJob
			in.Jobs = append(in.Jobs, j)
		}
		return nil
	case "batch/v1/CronJob":
		return decodeInto(d, &in.CronJobs)
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return decodeInto(d, &in.HPAs)
	case "policy/v1/PodDisruptionBudget":
		return decodeInto(d, &in.PDBs)
	case "scheduling.k8s.io/v1/PriorityClass":
		return decodeInto(d, &in.PriorityClasses)
	case "v1/Service":
		return decodeInto(d, &in.Services)
	case "keda.sh/v1alpha1/ScaledObject":
		so := &ScaledObject{}
		if err := decodeLoose(d.Object, so); err != nil {
			return err
		}
		in.ScaledObjects = append(in.ScaledObjects, so)
		return nil
	case "v1/Pod":
		p := &corev1.Pod{}
		if err := decodeDoc(d, p); err != nil {
			return err
		}
		if metav1.GetControllerOf(p) == nil { // owned pods come from their controller
			in.Pods = append(in.Pods, p)
		}
		return nil
	case "apps/v1/ReplicaSet":
		in.Skipped["ReplicaSet (owned by its Deployment)"]++
		return nil
	}
	if strings.HasPrefix(d.APIVersion, "karpenter.") {
		obj, ps := v.Decode(d)
		if len(ps) > 0 {
			return ps
		}
		switch o := obj.(type) {
		case *v1.NodePool:
			in.NodePools = append(in.NodePools, o)
			if in.poolDocs == nil {
				in.poolDocs = map[*v1.NodePool]*manifest.Document{}
			}
			in.poolDocs[o] = d
		case *awsv1.EC2NodeClass:
			in.NodeClasses = append(in.NodeClasses, o)
		case *v1.NodeClaim:
			in.Skipped["NodeClaim (the simulator launches its own)"]++
		}
		return nil
	}
	in.Skipped[d.Kind]++
	return nil
}

// valueProblem turns a decode error into a Problem naming the field (found
// by manifest.Locate when the decoder does not say), its line and a fix.
func valueProblem(d *manifest.Document, err error, decode func(map[string]any) error) error {
	field := manifest.Locate(d.Object, decode)
	msg := err.Error()
	if field != "" {
		msg = strings.TrimPrefix(msg, "json: ")
	}
	return manifest.Problems{{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field,
		Message: msg, Fix: manifest.ValueFix(msg)}}
}

// danglingNodeClassRefs: a NodePool whose EC2NodeClass is not among the
// scenario's would launch nothing (Karpenter marks it not ready); say so
// rather than simulate a cluster that cannot exist. A scenario with no
// EC2NodeClass at all (a dump of NodePools and workloads only) is taken to
// have the ones its NodePools name; the report notes it.
func (in *Input) danglingNodeClassRefs() manifest.Problems {
	if len(in.NodeClasses) == 0 {
		return nil
	}
	var have []string
	known := map[string]bool{}
	for _, nc := range in.NodeClasses {
		known[nc.Name] = true
		have = append(have, nc.Name)
	}
	sort.Strings(have)
	var ps manifest.Problems
	for _, np := range in.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Kind != "EC2NodeClass" || known[ref.Name] {
			continue
		}
		fix := "add the EC2NodeClass manifest to the scenario directory"
		if len(have) > 0 {
			fix += ", or name one it has: " + strings.Join(have, ", ")
		}
		d := in.poolDocs[np]
		const field = "spec.template.spec.nodeClassRef.name"
		ps = append(ps, manifest.Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field,
			Message: fmt.Sprintf("EC2NodeClass %q is not in the scenario: a NodePool whose node class does not exist launches nothing", ref.Name),
			Fix:     fix})
	}
	return ps
}

func decodeInto[T any](d *manifest.Document, list *[]*T) error {
	obj := new(T)
	if err := decodeDoc(d, obj); err != nil {
		return err
	}
	*list = append(*list, obj)
	return nil
}

// decodeDoc decodes a Kubernetes object strictly, reporting unknown or
// mistyped fields with their path and line.
func decodeDoc(d *manifest.Document, v any) error {
	b, err := json.Marshal(d.Object)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(b, v)
	if err != nil {
		return valueProblem(d, err, func(o map[string]any) error {
			b, _ := json.Marshal(o)
			_, err := sigsjson.UnmarshalStrict(b, reflect.New(reflect.TypeOf(v).Elem()).Interface())
			return err
		})
	}
	var ps manifest.Problems
	for _, e := range strict {
		msg := e.Error()
		field := ""
		if i := strings.Index(msg, `unknown field "`); i >= 0 {
			field = strings.TrimSuffix(msg[i+len(`unknown field "`):], `"`)
		}
		ps = append(ps, manifest.Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field,
			Message: msg, Fix: "check the spelling; kubectl explain " + strings.ToLower(d.Kind) + " lists the fields"})
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}
